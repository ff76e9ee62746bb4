/**
 * Generates `gen/<service>/` from every `spec/<service>.yaml`:
 * - `validators.ts`: valibot schemas for every component schema;
 * - `types.ts`: the `paths`, `operations` and `components` types openapi-fetch reads, made by
 *   openapi-typescript (script./gen/openapi_types.ts);
 * - `routes.ts`: the route table the server registers its handlers from.
 *
 * An OpenRPC spec (JSON-RPC) gives `validators.ts` and `methods.ts`, the method table.
 *
 * `spec/common.yaml` holds the schemas several services share; the others refer to them as
 * `common.yaml#/components/schemas/<Name>`, and their `validators.ts` import them from
 * `gen/common/validators.ts` and export them again under the same names.
 *
 * Code built from src/ goes to `bundles/`, apart from what the specs give:
 * `bundles/sandbox_sources.ts` holds the container process's modules (src/mcm/sandbox/);
 * `bundles/engine_sources.ts` the inference engine process and its installer (src/inference/);
 * `bundles/dashboard_assets.ts` the node's web page (src/dashboard/ui/).
 *
 * `deno task gen --check` writes nothing and fails when `gen/` or `bundles/` is not what the
 * specs and sources give.
 *
 * @module
 */
import { parse } from "yaml";
import { emitMethods } from "./gen/methods_emitter.ts";
import { emitRoutes } from "./gen/routes_emitter.ts";
import { emitDashboardAssets } from "./gen/dashboard_emitter.ts";
import { emitDefaults } from "./gen/defaults_emitter.ts";
import { emitSandboxSources } from "./gen/sandbox_emitter.ts";
import { emitEngineSources } from "./gen/engine_emitter.ts";
import { emitOpenApiTypes } from "./gen/openapi_types.ts";
import { type Documents, Resolver } from "./gen/refs.ts";
import { emitValidators } from "./gen/valibot_emitter.ts";

const SPEC_DIR = new URL("../spec/", import.meta.url);
const ROOT = new URL("../", import.meta.url);

/**
 * The files of gen/<service>/ that spec/<service>.yaml gives (`documents` holds every spec), but
 * `types.ts` (openapi-typescript's, emitOpenApiTypes).
 */
export function generate(service: string, documents: Documents): Map<string, string> {
  const specFile = `spec/${service}.yaml`;
  const resolver = new Resolver(documents, `${service}.yaml`);
  const spec = resolver.document as Parameters<typeof emitRoutes>[0];
  const schemas = spec.components?.schemas ?? {};
  const validators = emitValidators(schemas, specFile, resolver.externalSchemas());
  if ((spec as Record<string, unknown>).openrpc) {
    return new Map([
      [`${service}/validators.ts`, validators],
      [
        `${service}/methods.ts`,
        emitMethods(spec as unknown as Parameters<typeof emitMethods>[0], service, specFile),
      ],
    ]);
  }
  const defaults = emitDefaults(schemas, specFile, resolver);
  return new Map([
    [`${service}/validators.ts`, validators],
    ...(defaults ? [[`${service}/defaults.ts`, defaults] as [string, string]] : []),
    ...(Object.keys(spec.paths ?? {}).length > 0
      ? [[`${service}/routes.ts`, emitRoutes(spec, service, specFile, resolver)] as [
        string,
        string,
      ]]
      : []),
  ]);
}

async function main(check: boolean): Promise<number> {
  const services = [...Deno.readDirSync(SPEC_DIR)]
    .filter((e) => e.isFile && e.name.endsWith(".yaml"))
    .map((e) => e.name.slice(0, -".yaml".length))
    .sort();
  const documents: Documents = Object.fromEntries(
    await Promise.all(
      services.map(async (service) => [
        `${service}.yaml`,
        parse(await Deno.readTextFile(new URL(`${service}.yaml`, SPEC_DIR))),
      ]),
    ),
  );
  const stale: string[] = [];
  const outputs = [
    ...services.map((service) => generate(service, documents)).flatMap((files) =>
      [...files].map(([file, content]) => [`gen/${file}`, content] as [string, string])
    ),
    ["bundles/sandbox_sources.ts", await emitSandboxSources()] as [string, string],
    ["bundles/engine_sources.ts", await emitEngineSources()] as [string, string],
    ["bundles/dashboard_assets.ts", await emitDashboardAssets()] as [string, string],
  ];
  const typed = services.filter((name) => !documents[`${name}.yaml`].openrpc);
  const specs = typed.map((service) => `spec/${service}.yaml`)
    .map((file) => ({ url: new URL(file, ROOT), file }));
  const types = await emitOpenApiTypes(specs);
  typed.forEach((service, i) => outputs.push([`gen/${service}/types.ts`, types[i]]));
  {
    for (const [file, content] of outputs) {
      const url = new URL(file, ROOT);
      const current = await Deno.readTextFile(url).catch(() => undefined);
      if (current === content) continue;
      stale.push(file);
      if (!check) {
        await Deno.mkdir(new URL(".", url), { recursive: true });
        await Deno.writeTextFile(url, content);
      }
    }
  }
  if (check && stale.length > 0) {
    console.error(`generated files are stale; run 'deno task gen':\n  ${stale.join("\n  ")}`);
    return 1;
  }
  console.log(
    check
      ? "gen/ and bundles/ are up to date"
      : `generated ${stale.length} file(s) from ${services.length} spec(s)`,
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args.includes("--check")));
