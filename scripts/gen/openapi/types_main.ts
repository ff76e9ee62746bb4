/**
 * openapi-typescript run apart from the project (`deno run --config scripts/gen/openapi/deno.json`,
 * its own lock): openapi-typescript brings `typescript` into an npm resolution, and in the
 * project's resolution that makes valibot's optional peer `typescript` part of the node's graph,
 * 23 MB more for a node's first start (tests/first_start_packages_test.ts). Reads the spec files
 * named in its arguments and writes a JSON array of their types' sources to stdout.
 *
 * @module
 */
import openapiTS, { astToString } from "openapi-typescript";
import { pathToFileURL } from "node:url";

const sources: string[] = [];
for (const path of Deno.args) {
  const ast = await openapiTS(pathToFileURL(path), {
    silent: true,
    // `{ type: object }` without properties holds anything (as the validators let it), not
    // nothing: openapi-typescript's own default types it Record<string, never>.
    emptyObjectsUnknown: true,
    // A field with a default may be left out by whoever writes it (a config file, a request):
    // the default is the reader's, as in the validators, not a promise of the writer.
    defaultNonNullable: false,
  });
  sources.push(astToString(ast));
}
console.log(JSON.stringify(sources));
