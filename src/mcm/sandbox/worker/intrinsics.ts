/**
 * The built-ins the sandbox's own bookkeeping uses, taken when this module is evaluated: before
 * any of the microservice's code runs, which may then replace every global and prototype
 * method it sees (`Atomics.sub`, `Math.max`, `JSON.parse`, `Array.prototype.push`…) without
 * reaching the activity counters, the watchdog's reports, the channel's framing or the log
 * (Node's "primordials"). Prototype methods are uncurried (`ArrayPrototypePush(array, item)`),
 * through a `call` bound now, so no later lookup of `call`, `apply` or the method happens.
 *
 * @module
 */

const { bind, call } = Function.prototype;
/** `method` as a function of its receiver and arguments, immune to later replacements. */
const uncurry = bind.bind(call) as <T, A extends unknown[], R>(
  method: (this: T, ...args: A) => R,
) => (self: T, ...args: A) => R;

const getter = <T>(target: object, name: PropertyKey) =>
  uncurry(Object.getOwnPropertyDescriptor(target, name)!.get! as (this: T) => unknown);

export const AtomicsAdd = Atomics.add;
export const AtomicsSub = Atomics.sub;
export const AtomicsLoad = Atomics.load;
export const AtomicsWaitAsync = Atomics.waitAsync;
export const MathMax = Math.max;
export const MathMin = Math.min;
export const MathFloor = Math.floor;
export const JSONParse = JSON.parse;
export const JSONStringify = JSON.stringify;
export const DateNow = Date.now;
export const NumberIsFinite = Number.isFinite;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
export const ObjectGetPrototypeOf = Object.getPrototypeOf;
export const ReflectApply = Reflect.apply;
export const ReflectConstruct = Reflect.construct;
export const SafeProxy = Proxy;
export const SafeMap = Map;
export const SafeWeakMap = WeakMap;
export const SafeWeakRef = WeakRef;
export const SafeFinalizationRegistry = FinalizationRegistry;
export const SafeRangeError = RangeError;
export const SafeUint8Array = Uint8Array;
export const SafeSharedArrayBuffer = SharedArrayBuffer;
export const SafeInt32Array = Int32Array;
export const SafePromise = Promise;

export const ArrayPrototypePush = uncurry(Array.prototype.push);
export const ArrayPrototypeShift = uncurry(Array.prototype.shift) as <T>(array: T[]) => T;
export const ArrayPrototypeJoin = uncurry(Array.prototype.join);
export const MapPrototypeGet = uncurry(Map.prototype.get) as <K, V>(
  map: Map<K, V>,
  key: K,
) => V | undefined;
export const MapPrototypeSet = uncurry(Map.prototype.set) as <K, V>(
  map: Map<K, V>,
  key: K,
  value: V,
) => Map<K, V>;
export const MapPrototypeDelete = uncurry(Map.prototype.delete) as <K, V>(
  map: Map<K, V>,
  key: K,
) => boolean;
export const MapPrototypeClear = uncurry(Map.prototype.clear);
export const MapPrototypeForEach = uncurry(Map.prototype.forEach) as <K, V>(
  map: Map<K, V>,
  each: (value: V, key: K) => void,
) => void;
export const WeakMapPrototypeGet = uncurry(WeakMap.prototype.get) as <K extends object, V>(
  map: WeakMap<K, V>,
  key: K,
) => V | undefined;
export const WeakMapPrototypeSet = uncurry(WeakMap.prototype.set) as <K extends object, V>(
  map: WeakMap<K, V>,
  key: K,
  value: V,
) => WeakMap<K, V>;
export const WeakRefPrototypeDeref = uncurry(WeakRef.prototype.deref) as <T extends object>(
  ref: WeakRef<T>,
) => T | undefined;
export const FinalizationRegistryPrototypeRegister = uncurry(
  FinalizationRegistry.prototype.register,
) as <T>(registry: FinalizationRegistry<T>, target: object, held: T) => void;
export const PromisePrototypeThen = uncurry(Promise.prototype.then) as <T>(
  promise: Promise<T>,
  onFulfilled: (value: T) => unknown,
  onRejected?: (reason: unknown) => unknown,
) => Promise<unknown>;
export const StringPrototypeSlice = uncurry(String.prototype.slice);
export const StringPrototypeReplaceAll = uncurry(String.prototype.replaceAll) as unknown as (
  text: string,
  search: string,
  replacement: string,
) => string;
export const StringPrototypeStartsWith = uncurry(String.prototype.startsWith);
export const ErrorPrototypeToString = uncurry(Error.prototype.toString) as (
  error: unknown,
) => string;
export const TextEncoderPrototypeEncode = uncurry(TextEncoder.prototype.encode);
export const ArrayBufferIsView = ArrayBuffer.isView;
export const ArrayBufferPrototypeGetByteLength = getter<ArrayBuffer>(
  ArrayBuffer.prototype,
  "byteLength",
) as (buffer: ArrayBuffer) => number;
export const SharedArrayBufferPrototypeGetByteLength = getter<SharedArrayBuffer>(
  SharedArrayBuffer.prototype,
  "byteLength",
) as (buffer: SharedArrayBuffer) => number;
export const TypedArrayPrototypeGetBuffer = getter<Uint8Array>(
  ObjectGetPrototypeOf(Uint8Array.prototype),
  "buffer",
) as (view: ArrayBufferView) => ArrayBufferLike;
export const TypedArrayPrototypeGetByteOffset = getter<Uint8Array>(
  ObjectGetPrototypeOf(Uint8Array.prototype),
  "byteOffset",
) as (view: ArrayBufferView) => number;
const TypedArrayPrototype = ObjectGetPrototypeOf(Uint8Array.prototype);
export const TypedArrayPrototypeGetLength = getter<Uint8Array>(TypedArrayPrototype, "length") as (
  view: Uint8Array,
) => number;
export const TypedArrayPrototypeSet = uncurry(TypedArrayPrototype.set) as (
  view: Uint8Array,
  source: ArrayLike<number>,
  offset?: number,
) => void;
export const TypedArrayPrototypeSubarray = uncurry(TypedArrayPrototype.subarray) as (
  view: Uint8Array,
  start?: number,
  end?: number,
) => Uint8Array;
export const TypedArrayPrototypeGetByteLength = getter<Uint8Array>(
  ObjectGetPrototypeOf(Uint8Array.prototype),
  "byteLength",
) as (view: ArrayBufferView) => number;

/** A copy of `bytes` in a new Uint8Array (not `slice`: its class is looked up, species). */
export function copyBytes(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const copy = new SafeUint8Array(TypedArrayPrototypeGetLength(bytes));
  TypedArrayPrototypeSet(copy, bytes);
  return copy;
}

/**
 * Bytes `start` to `end` of `bytes`, as a view of the same memory (not `subarray`: its class is
 * looked up, species).
 */
export function viewOfBytes(bytes: Uint8Array, start: number, end: number): Uint8Array {
  return new SafeUint8Array(
    TypedArrayPrototypeGetBuffer(bytes),
    TypedArrayPrototypeGetByteOffset(bytes) + start,
    end - start,
  );
}

/** `performance.now`, bound now. */
export const performanceNow: () => number = performance.now.bind(performance);
/** `crypto.randomUUID`, bound now. */
export const randomUUID: () => string = crypto.randomUUID.bind(crypto);

/**
 * Calls `onFulfilled` or `onRejected` once `promise` settles: the native `then`, called as
 * taken, not `await` and not the promise's `then`. Its species lookup (the promise's
 * `constructor`, then `Promise[Symbol.species]`) cannot reach the microservice's code: the
 * sandbox fixes both before that code runs (sandbox_globals.ts).
 */
export function onSettled<T>(
  promise: Promise<T>,
  onFulfilled: (value: T) => void,
  onRejected: (reason: unknown) => void,
): void {
  PromisePrototypeThen(promise, onFulfilled, onRejected);
}

/** Calls `callback` once `promise` settles, either way (onSettled). */
export function whenSettled<T>(promise: Promise<T>, callback: () => void): void {
  onSettled(promise, callback, callback);
}

/** `Promise.resolve`, bound now. */
export const PromiseResolve: <T>(value: T) => Promise<T> = Promise.resolve.bind(Promise);
/** `Promise.withResolvers`, bound now. */
export const PromiseWithResolvers: <T>() => PromiseWithResolvers<T> = Promise.withResolvers.bind(
  Promise,
);

/** `uncurry`, for the modules that take methods of their own. */
export { uncurry };
