/**
 * Intl objects hold ICU's data outside what V8 counts (a DateTimeFormat about 28 KiB, of which
 * V8 sees 200 bytes), so the sandbox charges each a measured cost while it lives (a
 * FinalizationRegistry releases it) to its container's memory (memory_charge.ts). The costs
 * are the resident memory each kind adds beyond V8's count, measured in a worker with 20,000
 * objects of assorted locales (Deno 2.9.6): README, "Microservices".
 *
 * The `toLocale*String` and `localeCompare` paths make an Intl object of the same kinds on
 * each call with locales or options, which only V8's garbage collection frees, and V8 does not
 * know their size: the sandbox serves those calls from a few formatters kept per locales and
 * options instead (charged like the others), which also spares each call the object's making.
 *
 * @module
 */
import {
  FinalizationRegistryPrototypeRegister,
  JSONStringify,
  MapPrototypeClear,
  MapPrototypeGet,
  MapPrototypeSet,
  ObjectDefineProperty,
  ReflectApply,
  ReflectConstruct,
  SafeFinalizationRegistry,
  SafeMap,
  SafeProxy,
  uncurry,
} from "./intrinsics.ts";

/** Bytes charged per live object of each kind (see the module's text). */
export const INTL_COSTS = {
  Collator: 2048,
  DateTimeFormat: 28 * 1024,
  DisplayNames: 2048,
  ListFormat: 1024,
  Locale: 1024,
  NumberFormat: 1024,
  PluralRules: 3072,
  RelativeTimeFormat: 8 * 1024,
  Segmenter: 7 * 1024,
  /** What `Segmenter.prototype.segment` returns (its own copy of the break iterator). */
  Segments: 2048,
} as const;

/** Formatters kept for the `toLocale*` paths, at most (then the cache starts again). */
const CACHED = 64;

/** The charge of the Intl objects alive. */
export interface IntlCharge {
  charged(): number;
}

type Kind = keyof typeof INTL_COSTS;
type Constructor = new (...args: unknown[]) => object;

/** The date-time options the `toLocale*String` paths read (ECMA-402, CreateDateTimeFormat). */
const DATE_OPTIONS = [
  "localeMatcher",
  "calendar",
  "numberingSystem",
  "hour12",
  "hourCycle",
  "timeZone",
  "weekday",
  "era",
  "year",
  "month",
  "day",
  "dayPeriod",
  "hour",
  "minute",
  "second",
  "fractionalSecondDigits",
  "timeZoneName",
  "formatMatcher",
  "dateStyle",
  "timeStyle",
];
const DATE_FIELDS = ["weekday", "year", "month", "day"];
const TIME_FIELDS = ["dayPeriod", "hour", "minute", "second", "fractionalSecondDigits"];
const ALL_FIELDS = [...DATE_FIELDS, ...TIME_FIELDS];

/**
 * The options of a Date `toLocale*String` call as Intl.DateTimeFormat's (which defaults to the
 * date only): the fields `required` names get `defaults` when none is given.
 */
function dateOptions(
  options: unknown,
  required: "date" | "time" | "any",
  defaults: "date" | "time" | "all",
): Record<string, unknown> {
  const given = (options ?? {}) as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (let i = 0; i < DATE_OPTIONS.length; i++) {
    const value = given[DATE_OPTIONS[i]];
    if (value !== undefined) copy[DATE_OPTIONS[i]] = value;
  }
  if (copy.dateStyle !== undefined || copy.timeStyle !== undefined) {
    // A date's call with a timeStyle (or a time's with a dateStyle) is a TypeError: the
    // native path says so.
    if (required === "date" && copy.timeStyle !== undefined) throw new TypeError("timeStyle");
    if (required === "time" && copy.dateStyle !== undefined) throw new TypeError("dateStyle");
    return copy;
  }
  let present = false;
  const fields = required === "date" ? DATE_FIELDS : required === "time" ? TIME_FIELDS : ALL_FIELDS;
  for (let i = 0; i < fields.length; i++) if (copy[fields[i]] !== undefined) present = true;
  if (present) return copy;
  if (defaults !== "time") copy.year = copy.month = copy.day = "numeric";
  if (defaults !== "date") copy.hour = copy.minute = copy.second = "numeric";
  return copy;
}

/** Installs the charge on `global.Intl` and the `toLocale*` paths (before the microservice). */
export function chargeIntl(global: typeof globalThis): IntlCharge {
  const intl = global.Intl as unknown as Record<Kind, Constructor>;
  let charged = 0;
  const release = new SafeFinalizationRegistry<number>((bytes) => charged -= bytes);
  const charge = (object: unknown, kind: Kind) => {
    if ((typeof object !== "object" && typeof object !== "function") || object === null) return;
    charged += INTL_COSTS[kind];
    FinalizationRegistryPrototypeRegister(release, object as object, INTL_COSTS[kind]);
  };
  const native = {} as Record<Kind, Constructor>;
  for (const kind of Object.keys(INTL_COSTS) as Kind[]) {
    const constructor = intl[kind];
    if (kind === "Segments" || typeof constructor !== "function") continue;
    native[kind] = constructor;
    const proxy = new SafeProxy(constructor, {
      construct(target, args, newTarget) {
        const object = ReflectConstruct(target, args, newTarget);
        charge(object, kind);
        return object;
      },
      apply(target, self, args) {
        const object = ReflectApply(target, self, args);
        charge(object, kind);
        return object;
      },
    });
    ObjectDefineProperty(constructor.prototype, "constructor", {
      value: proxy,
      writable: true,
      configurable: true,
    });
    intl[kind] = proxy;
  }
  const Segmenter = native.Segmenter.prototype as Intl.Segmenter;
  const segment = uncurry(Segmenter.segment);
  Segmenter.segment = function (this: Intl.Segmenter, input: string) {
    const segments = segment(this, input);
    charge(segments, "Segments");
    return segments;
  };

  // The toLocale* paths: a formatter per locales and options, kept.
  const cache = new SafeMap<string, object>();
  const formatter = <T extends object>(kind: Kind, locales: unknown, options: unknown): T => {
    const key = JSONStringify([kind, locales, options]);
    let made = MapPrototypeGet(cache, key) as T | undefined;
    if (made === undefined) {
      if (cache.size >= CACHED) MapPrototypeClear(cache);
      made = ReflectConstruct(native[kind], [locales, options]) as T;
      charge(made, kind);
      MapPrototypeSet(cache, key, made);
    }
    return made;
  };
  const format = uncurry(
    Object.getOwnPropertyDescriptor(
      Intl.NumberFormat.prototype,
      "format",
    )!.get!,
  ) as (self: object) => (value: unknown) => string;
  const formatDate = uncurry(
    Object.getOwnPropertyDescriptor(Intl.DateTimeFormat.prototype, "format")!.get!,
  ) as (self: object) => (value: unknown) => string;
  const compare = uncurry(
    Object.getOwnPropertyDescriptor(Intl.Collator.prototype, "compare")!.get!,
  ) as (self: object) => (a: string, b: string) => number;
  const getTime = uncurry(Date.prototype.getTime);
  const numberValue = uncurry(Number.prototype.valueOf);
  const bigintValue = uncurry(BigInt.prototype.valueOf);
  const toString = String;
  /** `name` of `target`, whose locales are argument `first` and options the next. */
  const withCache = <T>(
    target: object,
    name: string,
    first: number,
    serve: (self: T, args: unknown[]) => unknown,
  ) => {
    const original = (target as Record<string, (...args: unknown[]) => unknown>)[name];
    ObjectDefineProperty(target, name, {
      value: {
        [name](this: T, ...args: unknown[]) {
          // No locales nor options: V8 keeps a formatter of its own for the defaults.
          if (args[first] === undefined && args[first + 1] === undefined) {
            return ReflectApply(original, this, args);
          }
          try {
            return serve(this, args);
          } catch {
            return ReflectApply(original, this, args);
          }
        },
      }[name],
      writable: true,
      configurable: true,
    });
  };
  withCache<number>(Number.prototype, "toLocaleString", 0, (self, [locales, options]) => {
    const value = numberValue(self);
    return format(formatter("NumberFormat", locales, options))(value);
  });
  withCache<bigint>(BigInt.prototype, "toLocaleString", 0, (self, [locales, options]) => {
    const value = bigintValue(self);
    return format(formatter("NumberFormat", locales, options))(value);
  });
  withCache<string>(String.prototype, "localeCompare", 1, (self, [that, locales, options]) => {
    if (self === null || self === undefined) throw new TypeError("localeCompare");
    return compare(formatter("Collator", locales, options))(toString(self), toString(that));
  });
  const dates = [
    ["toLocaleString", "any", "all"],
    ["toLocaleDateString", "date", "date"],
    ["toLocaleTimeString", "time", "time"],
  ] as const;
  for (const [name, required, defaults] of dates) {
    withCache<Date>(Date.prototype, name, 0, (self, [locales, options]) => {
      const time = getTime(self);
      if (time !== time) return "Invalid Date";
      const settled = dateOptions(options, required, defaults);
      return formatDate(formatter("DateTimeFormat", locales, settled))(time);
    });
  }
  return { charged: () => charged };
}
