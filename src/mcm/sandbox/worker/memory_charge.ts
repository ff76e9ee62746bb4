/**
 * The memory a microservice holds outside what V8 counts for its worker (`heapUsed + external`
 * leaves out WebAssembly memories and SharedArrayBuffers, and counts a few hundred bytes of an
 * Intl object that holds kilobytes of ICU's), charged by construction: the sandbox wraps what
 * makes such memory before the microservice's code runs, adds it to the heap it reports to the
 * watchdog (watchdog.ts, CpuSample `heap`), and refuses, with a RangeError in the microservice's
 * own code (as WebAssembly does at a memory's maximum), an allocation or a grow that would take
 * the container past its MCM.MEMORY_MB. Intl objects are charged while alive (intl_charge.ts).
 *
 * - `new WebAssembly.Memory` and `grow`: checked before, and the memory's maximum bounded by
 *   what is left, so that `memory.grow` inside a module fails there too.
 * - Modules (`Module`, `compile`, `instantiate`, `Instance`, the streaming kinds): the memories
 *   a module defines get a maximum no larger than what is left (wasm_limits.ts); instantiating
 *   one whose initial memories do not fit is refused. A defined memory the module exports is
 *   measured as it grows; one it keeps to itself is charged at its maximum while it lives.
 * - SharedArrayBuffer (and `grow`): charged at its length while it lives.
 *
 * @module
 */
import { chargeIntl } from "./intl_charge.ts";
import { chargeSharedBuffers } from "./shared_buffer_charge.ts";
import {
  ArrayPrototypePush,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeSet,
  MathFloor,
  MathMin,
  ObjectDefineProperty,
  ObjectGetOwnPropertyDescriptor,
  PromisePrototypeThen,
  ReflectConstruct,
  SafeFinalizationRegistry,
  SafeMap,
  SafeProxy,
  SafeRangeError,
  SafeWeakMap,
  SafeWeakRef,
  SharedArrayBufferPrototypeGetByteLength,
  uncurry,
  WeakMapPrototypeGet,
  WeakMapPrototypeSet,
  WeakRefPrototypeDeref,
} from "./intrinsics.ts";
import { boundMemories, copyOfSource, type DefinedMemory, PAGE_BYTES } from "./wasm_limits.ts";

/** What the sandbox charges beyond V8's count. */
export interface MemoryCharge {
  /** Bytes charged now (WebAssembly memories, SharedArrayBuffers, Intl objects). */
  charged(): number;
}

type Memory = WebAssembly.Memory;
type Module = WebAssembly.Module;
type Instance = WebAssembly.Instance;

const MB = 2 ** 20;
const safeNumber = Number;
/** BigInt as it was before the microservice's code (which may replace the global). */
const NativeBigInt = BigInt;

function thenSafe<T, R>(promise: Promise<T>, then: (value: T) => R): Promise<R> {
  // The species lookup inside `then` must not be the microservice's (intrinsics.ts).
  ObjectDefineProperty(promise, "constructor", { value: undefined });
  return PromisePrototypeThen(promise, then) as Promise<R>;
}

/**
 * Installs the charge on `global` (the worker's global scope, before the microservice's code):
 * `limitBytes` is MCM.MEMORY_MB, `heap` the worker's heap and external bytes now.
 */
export function chargeMemory(
  global: { WebAssembly: typeof WebAssembly; SharedArrayBuffer: SharedArrayBufferConstructor },
  limitBytes: number,
  heap: () => number,
): MemoryCharge {
  const wasm = global.WebAssembly;
  const native = {
    Memory: wasm.Memory,
    Module: wasm.Module,
    Instance: wasm.Instance,
    compile: wasm.compile as (bytes: Uint8Array) => Promise<Module>,
    instantiateModule: wasm.instantiate as (
      module: Module,
      imports?: WebAssembly.Imports,
    ) => Promise<Instance>,
    instantiateBytes: wasm.instantiate as unknown as (
      bytes: Uint8Array,
      imports?: WebAssembly.Imports,
    ) => Promise<WebAssembly.WebAssemblyInstantiatedSource>,
    grow: uncurry(wasm.Memory.prototype.grow) as (self: Memory, delta: number | bigint) => number,
    buffer: uncurry(
      ObjectGetOwnPropertyDescriptor(wasm.Memory.prototype, "buffer")!.get! as (
        this: Memory,
      ) => ArrayBuffer,
    ),
    exports: uncurry(
      ObjectGetOwnPropertyDescriptor(wasm.Instance.prototype, "exports")!.get! as (
        this: Instance,
      ) => Record<string, unknown>,
    ),
    byteLength: uncurry(
      ObjectGetOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")!.get! as (
        this: ArrayBuffer,
      ) => number,
    ),
  };
  const ObjectKeys = Object.keys;
  /** Memories measured as they grow (made here, or exported by a module), by a number. */
  const memories = new SafeMap<number, WeakRef<Memory>>();
  let nextMemory = 0;
  const forget = new SafeFinalizationRegistry<number>((id) => MapPrototypeDelete(memories, id));
  /** Memories reserved (a module's own, unexported) and SharedArrayBuffers, bytes. */
  let reserved = 0;
  const release = new SafeFinalizationRegistry<number>((bytes) => reserved -= bytes);
  /** Charges `bytes` while `target` lives. */
  const reserve = (target: object, bytes: number) => {
    reserved += bytes;
    register(release, target, bytes);
  };
  const register = uncurry(SafeFinalizationRegistry.prototype.register);
  const intl = chargeIntl(global as unknown as typeof globalThis);
  /** Modules' defined memories. */
  const modules = new SafeWeakMap<Module, DefinedMemory[]>();

  const memoryBytes = (memory: Memory) => {
    const buffer = native.buffer(memory);
    try {
      return native.byteLength(buffer);
    } catch {
      return SharedArrayBufferPrototypeGetByteLength(buffer as unknown as SharedArrayBuffer);
    }
  };
  const wasmBytes = () => {
    let sum = 0;
    MapPrototypeForEach(memories, (ref: WeakRef<Memory>) => {
      const memory = WeakRefPrototypeDeref(ref);
      if (memory) sum += memoryBytes(memory);
    });
    return sum;
  };
  const charged = () => wasmBytes() + reserved + intl.charged();
  const left = () => limitBytes - heap() - charged();
  const refuse = (what: string, bytes: number): never => {
    throw new SafeRangeError(
      `${what}: ${MathFloor(bytes / MB)} MB more would take the microservice past its ` +
        `MCM.MEMORY_MB (${MathFloor(limitBytes / MB)} MB)`,
    );
  };
  const track = (memory: Memory) => {
    const id = nextMemory++;
    MapPrototypeSet(memories, id, new SafeWeakRef(memory));
    register(forget, memory, id);
  };
  const isMemory = (value: unknown) => {
    try {
      native.buffer(value as Memory);
      return true;
    } catch {
      return false;
    }
  };

  // WebAssembly.Memory: checked, bounded, measured.
  const Memory = new SafeProxy(native.Memory, {
    construct(target, args, newTarget) {
      const given = (args[0] ?? {}) as WebAssembly.MemoryDescriptor & { index?: string };
      // Each read once: a getter could answer the check and the allocation differently.
      const descriptor = {
        initial: given.initial,
        maximum: given.maximum,
        shared: given.shared,
        index: given.index,
      };
      const pages = safeNumber(descriptor.initial);
      const room = left();
      if (!(pages * PAGE_BYTES <= room)) refuse("WebAssembly.Memory()", pages * PAGE_BYTES);
      const allowed = MathFloor(room / PAGE_BYTES);
      if (descriptor.maximum !== undefined || !descriptor.shared) {
        const maximum = descriptor.maximum === undefined
          ? allowed
          : MathMin(safeNumber(descriptor.maximum), allowed);
        descriptor.maximum = descriptor.index === "i64" ? NativeBigInt(maximum) as never : maximum;
      }
      if (descriptor.index === undefined) delete descriptor.index;
      const memory = ReflectConstruct(target, [descriptor], newTarget) as Memory;
      track(memory);
      return memory;
    },
  });
  // A resizable view grows the memory past the wrapped grow(): not in the sandbox.
  if ("toResizableBuffer" in native.Memory.prototype) {
    ObjectDefineProperty(native.Memory.prototype, "toResizableBuffer", {
      value: function toResizableBuffer() {
        throw new TypeError(
          "WebAssembly.Memory.toResizableBuffer() is not available here: use grow()",
        );
      },
      writable: true,
      configurable: true,
    });
  }
  ObjectDefineProperty(native.Memory.prototype, "grow", {
    value: function grow(this: Memory, delta: unknown) {
      const pages = safeNumber(delta);
      if (!(pages * PAGE_BYTES <= left())) {
        refuse("WebAssembly.Memory.grow()", pages * PAGE_BYTES);
      }
      return native.grow(this, typeof delta === "bigint" ? delta : pages);
    },
    writable: true,
    configurable: true,
  });

  // Modules: their memories bounded at compile time, charged at instantiation.
  const bounded = (source: unknown) => {
    const { bytes, memories } = boundMemories(
      copyOfSource(source),
      MathFloor(left() / PAGE_BYTES),
    );
    return { bytes, memories };
  };
  const known = (module: Module, memories: DefinedMemory[]) => {
    WeakMapPrototypeSet(modules, module, memories);
    return module;
  };
  const checkRoom = (module: Module) => {
    const defined = WeakMapPrototypeGet(modules, module) ?? [];
    let bytes = 0;
    for (let i = 0; i < defined.length; i++) bytes += defined[i].initialPages * PAGE_BYTES;
    if (!(bytes <= left())) refuse("WebAssembly instantiation", bytes);
    return defined;
  };
  /** After instantiation: its new exported memories measured, the others reserved. */
  const charge = (instance: Instance, defined: DefinedMemory[]) => {
    const exports = native.exports(instance);
    const names = ObjectKeys(exports);
    const seen: Memory[] = [];
    for (let i = 0; i < names.length; i++) {
      const value = exports[names[i]];
      if (isMemory(value)) ArrayPrototypePush(seen, value as Memory);
    }
    let fresh = 0;
    for (let i = 0; i < seen.length; i++) {
      let tracked = false;
      MapPrototypeForEach(memories, (ref: WeakRef<Memory>) => {
        if (WeakRefPrototypeDeref(ref) === seen[i]) tracked = true;
      });
      if (!tracked) {
        track(seen[i]);
        fresh++;
      }
    }
    let kept = 0;
    for (let i = fresh; i < defined.length; i++) kept += defined[i].maxPages * PAGE_BYTES;
    if (kept > 0) {
      reserve(instance, kept);
    }
    return instance;
  };
  const Module = new SafeProxy(native.Module, {
    construct(target, args, newTarget) {
      const { bytes, memories } = bounded(args[0]);
      return known(ReflectConstruct(target, [bytes], newTarget) as Module, memories);
    },
  });
  const Instance = new SafeProxy(native.Instance, {
    construct(target, args, newTarget) {
      const defined = checkRoom(args[0] as Module);
      return charge(ReflectConstruct(target, args, newTarget) as Instance, defined);
    },
  });
  const compile = (source: unknown) => {
    const { bytes, memories } = bounded(source);
    return thenSafe(native.compile(bytes), (module) => known(module, memories));
  };
  const instantiate = (source: unknown, imports?: WebAssembly.Imports) => {
    // A Module is one of ours (every one is made here); not `instanceof`, which it could fake.
    if (WeakMapPrototypeGet(modules, source as Module) !== undefined) {
      const defined = checkRoom(source as Module);
      return thenSafe(
        native.instantiateModule(source as Module, imports),
        (instance: Instance) => charge(instance, defined),
      );
    }
    const { bytes, memories } = bounded(source);
    return thenSafe(native.instantiateBytes(bytes, imports), (result) => {
      known(result.module, memories);
      charge(result.instance, checkRoom(result.module));
      return result;
    });
  };
  const bytesOf = async (source: Response | PromiseLike<Response>) =>
    await (await source).arrayBuffer();
  Object.assign(wasm, {
    Memory,
    Module,
    Instance,
    compile,
    instantiate,
    compileStreaming: async (source: Response | PromiseLike<Response>) =>
      await compile(await bytesOf(source)),
    instantiateStreaming: async (
      source: Response | PromiseLike<Response>,
      imports?: WebAssembly.Imports,
    ) => await instantiate(await bytesOf(source), imports),
  });
  for (
    const [constructor, proxy] of [[native.Memory, Memory], [native.Module, Module], [
      native.Instance,
      Instance,
    ]] as const
  ) {
    ObjectDefineProperty(constructor.prototype, "constructor", {
      value: proxy,
      writable: true,
      configurable: true,
    });
  }

  chargeSharedBuffers(global, { left, refuse, reserve });
  return { charged };
}
