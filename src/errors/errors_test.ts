import assert from "node:assert/strict";
import {
  Cancelled,
  Conflict,
  DomainError,
  type DomainErrorClass,
  type ErrorKind,
  errorOfKind,
  Forbidden,
  Invalid,
  isErrorKind,
  NoMemory,
  NoSpace,
  NotFound,
  RangeNotSatisfiable,
  TooLarge,
  TooMany,
  Unauthenticated,
  Unavailable,
  Unprocessable,
  UnsupportedType,
  UpstreamFailed,
  UpstreamTimeout,
} from "./mod.ts";

const CLASSES: [DomainErrorClass, string, ErrorKind][] = [
  [Invalid, "Invalid", "invalid"],
  [Unauthenticated, "Unauthenticated", "unauthenticated"],
  [Forbidden, "Forbidden", "forbidden"],
  [NotFound, "NotFound", "not_found"],
  [Conflict, "Conflict", "conflict"],
  [TooLarge, "TooLarge", "too_large"],
  [UnsupportedType, "UnsupportedType", "unsupported_type"],
  [Unprocessable, "Unprocessable", "unprocessable"],
  [RangeNotSatisfiable, "RangeNotSatisfiable", "range_not_satisfiable"],
  [Cancelled, "Cancelled", "cancelled"],
  [UpstreamFailed, "UpstreamFailed", "upstream_failed"],
  [Unavailable, "Unavailable", "unavailable"],
  [UpstreamTimeout, "UpstreamTimeout", "upstream_timeout"],
  [NoSpace, "NoSpace", "no_space"],
  [NoMemory, "NoMemory", "no_memory"],
  [TooMany, "TooMany", "too_many"],
];

Deno.test("domain errors: each class has its kind and name, and is a DomainError and an Error", () => {
  for (const [Class, name, kind] of CLASSES) {
    const error = new Class(`what to fix about ${name}`);
    assert.ok(error instanceof DomainError, name);
    assert.ok(error instanceof Error, name);
    assert.equal(error.kind, kind, name);
    assert.equal(error.name, name);
    assert.equal(error.message, `what to fix about ${name}`);
    assert.deepEqual(error.details, {}, name);
    assert.match(String(error), new RegExp(`^${name}: what to fix`));
  }
});

Deno.test("domain errors: every kind has exactly one class, and no class is another's", () => {
  const kinds = CLASSES.map(([, , kind]) => kind);
  assert.equal(new Set(kinds).size, kinds.length);
  for (const [Class, name] of CLASSES) {
    const error = new Class("x");
    for (const [Other, otherName] of CLASSES) {
      if (Other !== Class) assert.ok(!(error instanceof Other), `${name} is not ${otherName}`);
    }
  }
});

Deno.test("domain errors: details are kept as given", () => {
  assert.deepEqual(new Unavailable("busy; retry later", { retryAfterSeconds: 1 }).details, {
    retryAfterSeconds: 1,
  });
  assert.equal(new RangeNotSatisfiable("range not satisfiable", { size: 42 }).details.size, 42);
  assert.deepEqual(new Unauthenticated("send a token", { scheme: "Basic" }).details, {
    scheme: "Basic",
  });
});

Deno.test("errorOfKind: each kind makes its class again, message and details kept", () => {
  for (const [Class, name, kind] of CLASSES) {
    const details = { resource: "model", id: name, field: "model" };
    const error = errorOfKind(kind, `what to fix about ${name}`, details);
    assert.ok(error instanceof Class, name);
    assert.equal(error.kind, kind);
    assert.equal(error.message, `what to fix about ${name}`);
    assert.deepEqual(error.details, details);
  }
  assert.deepEqual(errorOfKind("invalid", "x").details, {});
});

Deno.test("isErrorKind: the kinds of the classes, nothing else", () => {
  for (const [, , kind] of CLASSES) assert.ok(isErrorKind(kind), kind);
  for (const other of ["", "toString", "__proto__", "Invalid", 400, undefined, null]) {
    assert.ok(!isErrorKind(other), String(other));
  }
});
