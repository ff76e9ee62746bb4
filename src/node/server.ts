/**
 * Assembles a node: database, services, router, and the HTTP server.
 *
 * @module
 */
import { Router } from "itty-router";
import { errorResponse, responseForError } from "../http/errors.ts";
import { mountRoutes } from "../http/routes.ts";
import { ModelFiles } from "../store/model_files.ts";
import { ModelRecords } from "../store/model_records.ts";
import { ModelRegistry } from "../store/registry.ts";
import { storeHandlers, storeRoutes } from "../store/routes.ts";
import type { Settings } from "./config.ts";
import { openDatabase } from "./database.ts";

/** A node that is serving. */
export interface RunningNode {
  /** The address it listens on, with the port actually bound. */
  hostname: string;
  port: number;
  /** Stops accepting requests, lets running ones finish, closes the database. */
  shutdown(): Promise<void>;
}

const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, HEAD, POST, PUT, DELETE, OPTIONS",
  "Access-Control-Allow-Headers": "Authorization, Content-Type, Range, If-None-Match, If-Range",
  "Access-Control-Expose-Headers": "Content-Range, Content-Length, ETag, Accept-Ranges",
  "Access-Control-Max-Age": "600",
};

/** Adds the CORS headers; every response the node builds has mutable headers. */
function withCors(response: Response): Response {
  for (const [name, value] of Object.entries(CORS_HEADERS)) response.headers.set(name, value);
  return response;
}

/** Starts a node with these settings; resolves once it listens. */
export async function startNode(settings: Settings): Promise<RunningNode> {
  const db = openDatabase(settings.dataDir);
  const registry = new ModelRegistry(
    new ModelRecords(db),
    await ModelFiles.open(settings.dataDir),
    {
      maxFileBytes: settings.maxModelFileBytes,
    },
  );
  const report = await registry.recover();
  if (
    report.removedPartials + report.removedOrphanFolders + report.promotedPending > 0 ||
    report.markedNotReady.length > 0
  ) {
    console.log(`recovered model store: ${JSON.stringify(report)}`);
  }

  const router = Router();
  const mountOptions = { apiKey: settings.apiKey, readsRequireKey: settings.readsRequireKey };
  mountRoutes(router, storeRoutes, storeHandlers(registry), {
    ...mountOptions,
    prefixes: settings.storePrefixes,
  });
  const hint = `the model registry is under ${settings.storePrefixes.join(", ")}`;

  const handle = async (request: Request): Promise<Response> => {
    if (request.method === "OPTIONS") return withCors(new Response(null, { status: 204 }));
    try {
      const response = await router.fetch(request);
      return withCors(
        response ??
          errorResponse(
            404,
            `no route for ${request.method} ${new URL(request.url).pathname}; ${hint}`,
          ),
      );
    } catch (error) {
      return withCors(responseForError(error, request));
    }
  };

  const { promise: listening, resolve } = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve(
    { hostname: settings.host, port: settings.port, onListen: resolve },
    handle,
  );
  const addr = await listening;
  return {
    hostname: addr.hostname,
    port: addr.port,
    async shutdown() {
      await server.shutdown();
      db.close();
    },
  };
}
