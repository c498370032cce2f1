/** The live stream beside history (issue 24): channels, the worker's publisher, the workflow sink's worker end. */
export { compareOffsets, isOffset, START, type Offset, type StreamChannel, type StreamItem, type Subscription, type SubscribeOptions } from './channel';
export { MemoryHub, type HubOptions } from './hub';
export { GatewayRefusal, helloRefusal, httpTarget, liveStream, type LiveStream, type LiveStreamOptions, type PublishTarget, type WorkerHello } from './publisher';
export { RedisChannel, type RedisChannelOptions } from './redis';
export { streamSinks } from './sinks';
export { announceGateway, discoveredGateway, findGateway, gatewayRuntimeDir, GatewayAnnouncementSchema, type GatewayAddress, type GatewayAnnouncement, type ServedRuns } from './discovery';
export { CallStopSchema, httpStopRelay, StopBoard, type CallStop, type StopRelay } from './stops';
export { redisStopRelay } from './redis-stops';
