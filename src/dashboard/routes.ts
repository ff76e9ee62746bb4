/**
 * The dashboard (spec/dashboard.yaml): the page, its embedded assets (gzipped for browsers that
 * take it), and its status endpoint.
 *
 * @module
 */
import { type Asset, ASSETS } from "../../bundles/dashboard_assets.ts";
import { dashboardRoutes } from "../../gen/dashboard/routes.ts";
import { NotFound } from "../errors/mod.ts";
import { json } from "../http/reply.ts";
import type { Pipeline } from "../http/pipeline.ts";
import type { Handlers } from "../http/routes.ts";
import { nodeStatus, type StatusSources } from "./status.ts";

export { dashboardRoutes };

/** Where the page's script and stylesheet are served. */
export const ASSETS_PATH = "/dashboard/assets/";

/** Headers of every page answer: nothing runs but the page's own script, nothing frames it. */
const PAGE_HEADERS = {
  "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; " +
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; " +
    "frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-cache",
};

/** The handlers of the status endpoint. */
export function dashboardHandlers(sources: StatusSources): Handlers<typeof dashboardRoutes> {
  return { getStatus: async () => json(200, await nodeStatus(sources)) };
}

/** An asset's bytes, plain and gzipped (compressed once, on first use). */
interface Encoded {
  plain: Uint8Array;
  gzip: Promise<Uint8Array>;
}

const encoded = new Map<Asset, Encoded>();

function encode(asset: Asset): Encoded {
  let bytes = encoded.get(asset);
  if (!bytes) {
    const plain = new TextEncoder().encode(asset.body);
    const gzip = new Response(
      new Blob([plain]).stream().pipeThrough(new CompressionStream("gzip")),
    ).bytes();
    bytes = { plain, gzip };
    encoded.set(asset, bytes);
  }
  return bytes;
}

async function serveAsset(asset: Asset, request: Request): Promise<Response> {
  const headers: Record<string, string> = {
    ...PAGE_HEADERS,
    "Content-Type": asset.type,
    ETag: asset.etag,
    Vary: "Accept-Encoding",
  };
  if (request.headers.get("If-None-Match") === asset.etag) {
    return new Response(null, { status: 304, headers });
  }
  const { plain, gzip } = encode(asset);
  const gzipped = /\bgzip\b/.test(request.headers.get("Accept-Encoding") ?? "");
  const body = gzipped ? await gzip : plain;
  if (gzipped) headers["Content-Encoding"] = "gzip";
  headers["Content-Length"] = String(body.length);
  return new Response(request.method === "HEAD" ? null : body as Uint8Array<ArrayBuffer>, {
    headers,
  });
}

/** Serves the page at `path` and its assets under ASSETS_PATH, for GET and HEAD. */
export function mountDashboardPage(pipeline: Pipeline, path: string): void {
  const page = ASSETS["index.html"];
  for (const method of ["GET", "HEAD"]) {
    pipeline.route(method, path, ({ request }) => serveAsset(page, request));
    pipeline.route(method, `${ASSETS_PATH}:name`, ({ request, params }) => {
      const asset = Object.hasOwn(ASSETS, params.name) ? ASSETS[params.name] : undefined;
      if (!asset || asset === page) {
        throw new NotFound(`no dashboard asset '${params.name}'; the page is at ${path}`);
      }
      return serveAsset(asset, request);
    });
  }
}
