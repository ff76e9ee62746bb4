/**
 * Assembles a node: database, services, router, and the HTTP server.
 *
 * @module
 */
import meta from "../../deno.json" with { type: "json" };
import { LinkLocal } from "../discovery/link_local.ts";
import {
  localAddresses,
  machineCharacteristics,
  selfDescriber,
} from "../discovery/self_description.ts";
import { HubLink } from "../hub_client/hub_link.ts";
import { Identity } from "../identity/identity.ts";
import { insightError, insightHandlers, insightRoutes } from "../insight/routes.ts";
import { JSONRPC_PATH, mountJsonRpc } from "../jsonrpc/routes.ts";
import { mdsHandlers, mdsRoutes } from "../mds/routes.ts";
import { NodeServices } from "../mcm/node_services.ts";
import { errorResponse, responseForError } from "../http/errors.ts";
import { CORS_FILE_HEADERS } from "../http/cors.ts";
import { type Origin, Pipeline, type RequestContext } from "../http/pipeline.ts";
import { BundleFiles } from "../mcm/bundle_files.ts";
import { Deployments } from "../mcm/deployments.ts";
import { Images } from "../mcm/images.ts";
import { McmRecords } from "../mcm/mcm_records.ts";
import { mcmAuthorizer, mcmHandlers, mcmRoutes } from "../mcm/routes.ts";
import { mountRoutes } from "../http/routes.ts";
import { dashboardHandlers, dashboardRoutes, mountDashboardPage } from "../dashboard/routes.ts";
import { ModelFiles } from "../store/model_files.ts";
import { ModelRecords } from "../store/model_records.ts";
import { Provisioning } from "../store/provisioning.ts";
import { ModelRegistry } from "../store/registry.ts";
import { Transfers } from "../store/transfers.ts";
import { storeHandlers, storeRoutes } from "../store/routes.ts";
import { VIA_HEADER } from "../tunnel/routing.ts";
import type { Settings } from "./config.ts";
import { openDatabase } from "../storage/database.ts";
import { InferenceService } from "../inference/inference_service.ts";
import { containerCaller } from "../inference/caller_usage.ts";
import {
  inferenceHandlers,
  inferenceRoutes,
  modelLoading,
  openAiError,
} from "../inference/routes.ts";

/** A node that is serving. */
export interface RunningNode {
  /** The address it listens on, with the port actually bound. */
  hostname: string;
  port: number;
  /** Stops accepting requests, lets running ones finish, closes the database. */
  shutdown(): Promise<void>;
}

/** An environment variable the node may read, else undefined. */
function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** Starts a node with these settings; resolves once it listens. */
export async function startNode(settings: Settings): Promise<RunningNode> {
  const startedAt = Date.now();
  const db = openDatabase(settings.dataDir);
  // Before recovery changes anything: a key file that is not a key stops the start.
  const identity = await Identity.open(settings.dataDir, db, {
    name: settings.nodeName,
    version: meta.version,
    trustedIssuers: settings.trustedIssuers,
  }).catch((error) => {
    db.close();
    throw error;
  });
  const records = new ModelRecords(db);
  const files = await ModelFiles.open(settings.dataDir);
  const transfers = new Transfers();
  const registry = new ModelRegistry(records, files, transfers);
  const provisioning = new Provisioning(records, files, transfers, {
    maxFileBytes: settings.maxModelFileBytes,
    stallMs: settings.downloadStallSeconds * 1000,
    retries: settings.downloadRetries,
    downloadHosts: settings.downloadHosts,
  });
  const inference = new InferenceService(registry, {
    modelsDir: files.root,
    scriptsDir: `${settings.dataDir}/inference`,
  }, settings.inference);
  files.beforeChange((id) => inference.beforeFileChange(id));
  const report = await registry.recover();
  if (
    report.removedPartials + report.removedOrphanFolders + report.promotedPending > 0 ||
    report.markedNotReady.length > 0
  ) {
    console.log(`recovered model store: ${JSON.stringify(report)}`);
  }

  let boundPort = settings.port;
  const mcmRecords = new McmRecords(db);
  const bundleFiles = await BundleFiles.open(settings.dataDir);
  const images = new Images(mcmRecords, bundleFiles, settings.mcm);
  const deployments = new Deployments(mcmRecords, bundleFiles, images, settings.mcm, {
    nodeId: () => identity.nodeId,
    accountId: () => identity.accountId,
    port: () => boundPort,
    reservedPrefixes: [
      ...settings.storePrefixes,
      ...settings.insightPrefixes,
      ...settings.inference.prefixes,
      "/mcm",
      "/mds",
      "/dashboard",
      JSONRPC_PATH,
    ],
    readEnv,
    ownAddresses: () => Deno.networkInterfaces().map((i) => i.address),
    // The container's client takes its turn at the models (fair queuing between clients).
    answerCall: (container, call): Promise<unknown> =>
      nodeServices.answer(call, container, mcmRecords.container(container)?.client),
    inferenceUsage: (container) => {
      const caller = containerCaller(container);
      return inference.usage().has(caller) ? inference.usageOf(caller) : undefined;
    },
    forgetContainer: (container) => inference.forgetCaller(containerCaller(container)),
  });
  const linkLocal = new LinkLocal(
    selfDescriber(
      identity,
      await machineCharacteristics(settings.dataDir, meta.version),
      () => localAddresses(settings.host, boundPort),
      () => deployments.services(),
    ),
    settings.discovery,
  );

  const hub = settings.hub
    ? new HubLink(settings.hub.url, {
      identity,
      describe: () => linkLocal.self(),
      serve: async (request, origin): Promise<Response> => await handle(request, origin),
      port: () => boundPort,
    })
    : undefined;

  const nodeServices = new NodeServices(
    identity,
    linkLocal,
    hub,
    settings.inference.enabled ? inference : undefined,
    files.root,
  );

  const hint = `the model registry is under ${settings.storePrefixes.join(", ")}, insight under ${
    settings.insightPrefixes.join(", ")
  }, the OpenAI-compatible API under ${
    settings.inference.prefixes.join(", ")
  }, JSON-RPC at ${JSONRPC_PATH}, the node listing at /mds/v1/nodes, deployment at /mcm/v1`;

  // Microservices live outside the node's own prefixes (deployment refuses those), so only a
  // path no route knows is looked up in the microservice table.
  const serveContainer = async (
    { request, path, search }: RequestContext,
  ): Promise<Response> => {
    const target = deployments.match(path);
    if (!target) {
      return errorResponse(404, `no route for ${request.method} ${path}; ${hint}`);
    }
    if ("unknown" in target) {
      return errorResponse(
        404,
        `no microservice at ${path}; GET /mcm/v1/containers lists the deployed ones`,
      );
    }
    try {
      const answer = await target.runtime.forward(request, target.path + search, boundPort);
      // A microservice's own CORS answer is kept; otherwise it is the node's, file headers
      // exposed (a microservice may serve files with ranges).
      if (!answer.headers.has("access-control-allow-origin")) {
        for (const [name, value] of Object.entries(CORS_FILE_HEADERS)) {
          answer.headers.set(name, value);
        }
      }
      return answer;
    } catch (error) {
      return responseForError(error, request);
    }
  };

  const pipeline = new Pipeline({
    // Only asked for local routes: reading a header makes Deno build the whole header list.
    isRemote: ({ request }) => request.headers.has(VIA_HEADER),
    notFound: serveContainer,
  });
  const mountOptions = { apiKey: settings.apiKey, readsRequireKey: settings.readsRequireKey };
  mountRoutes(
    pipeline,
    storeRoutes,
    storeHandlers(
      registry,
      provisioning,
      settings.inference.enabled ? modelLoading(inference) : undefined,
    ),
    {
      ...mountOptions,
      prefixes: settings.storePrefixes,
    },
  );
  mountRoutes(pipeline, insightRoutes, insightHandlers(identity, linkLocal, hub), {
    apiKey: settings.apiKey,
    prefixes: settings.insightPrefixes,
    wrongKeyStatus: 401,
    errorFormat: insightError,
  });
  // Not behind readsRequireKey: peers without the key must reach the ping, and the listing has
  // its own credential (the caller's token).
  mountRoutes(pipeline, mdsRoutes, mdsHandlers(identity, linkLocal, hub), {
    apiKey: settings.apiKey,
    prefixes: [""],
  });
  if (settings.inference.enabled) {
    mountRoutes(pipeline, inferenceRoutes, inferenceHandlers(inference), {
      apiKey: settings.apiKey,
      prefixes: settings.inference.prefixes,
      wrongKeyStatus: 401,
      errorFormat: openAiError,
    });
  }
  mountJsonRpc(pipeline, identity);
  mountRoutes(pipeline, mcmRoutes, mcmHandlers(images, deployments), {
    apiKey: settings.mcm.apiKey,
    prefixes: [""],
    authorize: mcmAuthorizer(settings.mcm.apiKey, identity),
    local: true,
  });
  if (settings.dashboard.enabled) {
    const { dataDir } = settings;
    mountRoutes(
      pipeline,
      dashboardRoutes,
      dashboardHandlers({
        identity,
        registry,
        deployments,
        dataDir,
        startedAt,
        inference: settings.inference.enabled ? inference : undefined,
      }),
      { ...mountOptions, prefixes: [""] },
    );
    mountDashboardPage(pipeline, settings.dashboard.path);
  }
  const handle = (request: Request, origin?: Origin): Response | Promise<Response> =>
    pipeline.serve(request, origin);

  const { server, addr } = await pipeline.listen(settings.host, settings.port).catch((error) => {
    db.close();
    throw error;
  });
  boundPort = addr.port;
  try {
    await linkLocal.start(settings.host);
    hub?.start();
    deployments.restore();
  } catch (error) {
    await server.shutdown();
    db.close();
    throw error;
  }
  return {
    hostname: addr.hostname,
    port: addr.port,
    async shutdown() {
      // Open download streams would hold the server open; end them with a message first.
      provisioning.cancelAll("the node is shutting down; download again after it restarts");
      hub?.stop();
      await server.shutdown();
      await deployments.stopAll();
      await inference.close();
      // After the server: peers checking the goodbye must find the node gone.
      await linkLocal.stop();
      files.close();
      db.close();
    },
  };
}
