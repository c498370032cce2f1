/** The live stream beside history (issue 24): channels, the worker's publisher, the workflow sink's worker end. */
export { compareOffsets, isOffset, START, type Offset, type StreamChannel, type StreamItem, type Subscription, type SubscribeOptions } from './channel';
export { MemoryHub, type HubOptions } from './hub';
export { httpTarget, liveStream, type LiveStream, type LiveStreamOptions, type PublishTarget } from './publisher';
export { RedisChannel, type RedisChannelOptions } from './redis';
export { streamSinks } from './sinks';
