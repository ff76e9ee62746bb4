/**
 * Generators of hostile and broken input for the property-based tests (fast-check): path
 * segments, query strings, credentials, content types, bodies (JSON near the schema, truncated
 * JSON, random bytes, broken multipart), JWT-shaped tokens and tar archives.
 *
 * @module
 */
import fc from "fast-check";
import { packTar, type TarEntry } from "modern-tar";
import type * as v from "valibot";

/** How many cases each property runs: EDGENODE_FUZZ_RUNS, else `fallback`. */
export function fuzzRuns(fallback: number): number {
  const runs = Number(Deno.env.get("EDGENODE_FUZZ_RUNS"));
  return Number.isInteger(runs) && runs > 0 ? runs : fallback;
}

/** A path segment: plausible ids, traversal in every encoding, junk, and very long ones. */
export const segment: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/),
  fc.constantFrom(
    "..",
    "%2e%2e",
    "%2E%2E%2F",
    "..%2f..%2fconfig.json",
    "%252e%252e",
    "a%00b",
    "%",
    "%zz",
    "x".repeat(5000),
    "💥",
    "api-hello",
  ),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
);

/** Query parameters: the route's own names with odd values, and unknown names. */
export function queryFor(names: string[]): fc.Arbitrary<Record<string, string>> {
  const value = fc.oneof(
    fc.constantFrom("true", "false", "llm", "vlm", "media", "model", "mmproj", "", "0"),
    fc.string({ maxLength: 30 }),
    fc.constant("y".repeat(3000)),
  );
  const name = names.length > 0
    ? fc.oneof(fc.constantFrom(...names), fc.string({ minLength: 1, maxLength: 10 }))
    : fc.string({ minLength: 1, maxLength: 10 });
  return fc.dictionary(name, value, { maxKeys: 4 });
}

/** Which credential a request carries. */
export type Credential = "key" | "none" | "wrong" | "junk" | "basic" | "huge";
export const credential: fc.Arbitrary<Credential> = fc.constantFrom(
  "key",
  "key",
  "key",
  "none",
  "wrong",
  "junk",
  "basic",
  "huge",
);

/** The Authorization header of `credential`, or undefined. */
export function authorization(kind: Credential, key: string): string | undefined {
  switch (kind) {
    case "key":
      return `Bearer ${key}`;
    case "none":
      return undefined;
    case "wrong":
      return `Bearer ${key.slice(0, -1)}x`;
    case "junk":
      return "Bearer \u00ffjunk;\tvalue=";
    case "basic":
      return "Basic dXNlcjpwYXNz";
    case "huge":
      return `Bearer ${"k".repeat(16_000)}`;
  }
}

/** A Content-Type header, or none. */
export const contentType: fc.Arbitrary<string | undefined> = fc.option(
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "multipart/form-data; boundary=XyZ",
    "multipart/form-data",
    "multipart/form-data; boundary=",
    "application/octet-stream",
    "application/x-tar",
    "application/gzip",
    "text/plain",
    "application/x-www-form-urlencoded",
    "garbage/;;;=",
  ),
  { nil: undefined },
);

/** JSON near a schema: its own keys with any values, plus strays; or any JSON at all. */
export function jsonNear(schema: v.GenericSchema | undefined): fc.Arbitrary<string> {
  const entries = (schema as { entries?: Record<string, unknown> } | undefined)?.entries;
  const keys = entries ? Object.keys(entries) : [];
  const near = keys.length > 0
    ? fc.dictionary(
      fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 8 })),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: keys.length + 2 },
    ).map((object) => JSON.stringify(object))
    : fc.constant("{}");
  return fc.oneof(near, near, fc.json({ maxDepth: 3 }));
}

/** A multipart body with the boundary "XyZ", broken in one of several ways. */
export const brokenMultipart: fc.Arbitrary<Uint8Array> = fc.record({
  field: fc.constantFrom("file", "image", "name", "", "x"),
  filename: fc.option(fc.constantFrom("m.gguf", "../../etc/passwd", "a\u0000b", ""), {
    nil: undefined,
  }),
  content: fc.uint8Array({ maxLength: 600 }),
  boundary: fc.constantFrom("XyZ", "XyZ", "wrong", ""),
  end: fc.constantFrom("--XyZ--\r\n", "--XyZ\r\n", "", "--XyZ"),
  cut: fc.option(fc.nat(), { nil: undefined }),
}).map(({ field, filename, content, boundary, end, cut }) => {
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"${
    filename === undefined ? "" : `; filename="${filename}"`
  }\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const whole = new Uint8Array([
    ...new TextEncoder().encode(head),
    ...content,
    ...new TextEncoder().encode(`\r\n${end}`),
  ]);
  return cut === undefined ? whole : whole.slice(0, cut % (whole.length + 1));
});

/** A request body: none, JSON near `schema`, cut-off JSON, random bytes or broken multipart. */
export function bodyFor(schema: v.GenericSchema | undefined): fc.Arbitrary<Uint8Array | undefined> {
  const text = (arbitrary: fc.Arbitrary<string>) =>
    arbitrary.map((s) => new TextEncoder().encode(s));
  return fc.oneof(
    fc.constant(undefined),
    text(jsonNear(schema)),
    text(
      jsonNear(schema).chain((json) =>
        fc.nat({ max: Math.max(0, json.length - 1) }).map((n) => json.slice(0, n))
      ),
    ),
    fc.uint8Array({ maxLength: 3000 }),
    brokenMultipart,
  );
}

function base64url(text: string): string {
  return btoa(text).replace(/=+$/, "").replaceAll("+", "-").replaceAll("/", "_");
}

/** JWT-shaped strings: wrong algorithms, missing parts, junk claims, huge ones. */
export const jwtLike: fc.Arbitrary<string> = fc.oneof(
  fc.record({
    alg: fc.constantFrom("none", "HS256", "RS256", "EdDSA", "ES256", "", "HS512"),
    claims: fc.dictionary(
      fc.constantFrom("iss", "sub", "aud", "exp", "nbf", "scope", "node_id", "x"),
      fc.jsonValue({ maxDepth: 1 }),
      { maxKeys: 6 },
    ),
    signature: fc.constantFrom("", "sig", "A".repeat(86)),
  }).map(({ alg, claims, signature }) =>
    `${base64url(JSON.stringify({ alg, typ: "JWT" }))}.${base64url(JSON.stringify(claims))}.${
      base64url(signature)
    }`
  ),
  fc.constantFrom("", "a.b", "a.b.c.d", "....", `${"e".repeat(100_000)}.x.y`),
  fc.string({ maxLength: 200 }),
);

const TAR_NAMES = [
  "index.js",
  "../index.js",
  "/etc/passwd",
  "a/../../b",
  "manifest.json",
  "layer.tar",
  "x/index.js",
];

/** A tar archive with hostile entries, maybe cut short or with bytes changed. */
export const hostileTar: fc.Arbitrary<Promise<Uint8Array>> = fc.record({
  entries: fc.array(
    fc.record({
      name: fc.oneof(fc.constantFrom(...TAR_NAMES), fc.string({ minLength: 1, maxLength: 30 })),
      type: fc.constantFrom("file", "file", "symlink", "link", "directory", "character-device"),
      body: fc.string({ maxLength: 200 }),
    }),
    { maxLength: 6 },
  ),
  cut: fc.option(fc.nat(), { nil: undefined }),
  flip: fc.option(fc.nat(), { nil: undefined }),
}).map(async ({ entries, cut, flip }) => {
  const tar = await packTar(entries.map(({ name, type, body }): TarEntry => {
    const bytes = new TextEncoder().encode(body);
    const file = type === "file";
    return {
      header: {
        name,
        type: type as "file",
        size: file ? bytes.length : 0,
        ...(type === "symlink" || type === "link" ? { linkname: "/etc/passwd" } : {}),
      },
      body: file ? bytes : undefined,
    };
  }));
  const bytes = cut === undefined ? tar : tar.slice(0, cut % (tar.length + 1));
  if (flip !== undefined && bytes.length > 0) bytes[flip % bytes.length] ^= 0xff;
  return bytes;
});
