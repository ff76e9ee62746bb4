/**
 * SharedArrayBuffers charged to the container's memory (memory_charge.ts): V8 counts none of
 * their bytes in a worker's heap or external memory. Each is charged at its length while it
 * lives, a growth as it happens, and one that does not fit is refused with a RangeError.
 *
 * @module
 */
import {
  ObjectDefineProperty,
  ReflectConstruct,
  SafeProxy,
  SafeWeakMap,
  SharedArrayBufferPrototypeGetByteLength,
  uncurry,
  WeakMapPrototypeGet,
  WeakMapPrototypeSet,
} from "./intrinsics.ts";

const safeNumber = Number;

/** What a charge needs of the container's memory (memory_charge.ts). */
export interface Budget {
  /** Bytes the container may still allocate. */
  left(): number;
  /** Throws the RangeError of an allocation of `bytes` that does not fit. */
  refuse(what: string, bytes: number): never;
  /** Charges `bytes` while `target` lives. */
  reserve(target: object, bytes: number): void;
}

/** Wraps `global.SharedArrayBuffer` and its `grow` (before the microservice's code). */
export function chargeSharedBuffers(
  global: { SharedArrayBuffer: SharedArrayBufferConstructor },
  budget: Budget,
): void {
  const native = global.SharedArrayBuffer;
  const nativeGrow = uncurry(native.prototype.grow);
  /** The bytes charged per buffer so far. */
  const charged = new SafeWeakMap<SharedArrayBuffer, number>();
  const Shared = new SafeProxy(native, {
    construct(target, args, newTarget) {
      const length = safeNumber(args[0] ?? 0);
      if (!(length <= budget.left())) budget.refuse("SharedArrayBuffer()", length);
      const buffer = ReflectConstruct(target, [length, args[1]], newTarget) as SharedArrayBuffer;
      const bytes = SharedArrayBufferPrototypeGetByteLength(buffer);
      WeakMapPrototypeSet(charged, buffer, bytes);
      budget.reserve(buffer, bytes);
      return buffer;
    },
  });
  ObjectDefineProperty(native.prototype, "grow", {
    value: function grow(this: SharedArrayBuffer, length: unknown) {
      const wanted = safeNumber(length);
      const before = SharedArrayBufferPrototypeGetByteLength(this);
      if (!(wanted - before <= budget.left())) {
        budget.refuse("SharedArrayBuffer.grow()", wanted - before);
      }
      nativeGrow(this, wanted);
      const after = SharedArrayBufferPrototypeGetByteLength(this);
      const was = WeakMapPrototypeGet(charged, this);
      // The growth charged on its own (each charge is released with the buffer).
      if (was !== undefined && after > was) {
        budget.reserve(this, after - was);
        WeakMapPrototypeSet(charged, this, after);
      }
    },
    writable: true,
    configurable: true,
  });
  ObjectDefineProperty(native.prototype, "constructor", {
    value: Shared,
    writable: true,
    configurable: true,
  });
  global.SharedArrayBuffer = Shared;
}
