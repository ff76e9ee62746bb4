/**
 * Bytes and values at a boundary, whatever carries them (HTTP, a WebSocket, a file, a container
 * channel): reading a byte stream into one's own buffers, reading text within a size limit,
 * validating a value with messages that name the field, and an uploaded file as it arrives. A
 * leaf package: it imports src/errors and npm packages only.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { readText, validate } from "./mod.ts";
 *
 * const text = await readText(new Response('{"n":1}'), 1024);
 * const value = validate(v.object({ n: v.number() }), JSON.parse(text), "body");
 * console.assert(value.n === 1);
 * ```
 *
 * @module
 */
export * from "./byob_reader.ts";
export * from "./read_text.ts";
export * from "./upload_body.ts";
export * from "./validate.ts";
