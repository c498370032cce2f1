/** Every key of every member of a union. */
type AllKeys<T> = T extends unknown ? keyof T : never;

/**
 * `true` when a zod schema's type and a hand-written type agree: each assignable to the other, with the same keys in
 * all (an optional field missing on one side is a difference). Used as `const _check: SameType<z.infer<typeof S>, T> = true`.
 * Only machine/snapshot.ts still pairs hand-written types with schemas; every other shape is its schema's `z.infer`.
 */
export type SameType<A, B> = [A] extends [B] ? ([B] extends [A] ? ([AllKeys<A>] extends [AllKeys<B>] ? ([AllKeys<B>] extends [AllKeys<A>] ? true : false) : false) : false) : false;
