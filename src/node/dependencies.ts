/**
 * What a node's services are built from: the database and identity, the model store, the
 * inference engine, deployment, link-local discovery and the hub link. Each is built once, in the
 * order their needs allow; what holds something open is put on the node's stack as it is opened.
 *
 * @module
 */
import meta from "../../deno.json" with { type: "json" };
import { LinkLocal } from "../discovery/link_local.ts";
import {
  localAddresses,
  machineCharacteristics,
  type ModelsDescription,
  selfDescriber,
} from "../discovery/self_description.ts";
import { Pipeline } from "../http/pipeline.ts";
import { HubLink } from "../hub_client/hub_link.ts";
import { Identity } from "../identity/identity.ts";
import { containerCaller } from "../inference/caller_usage.ts";
import { InferenceService } from "../inference/inference_service.ts";
import { modelsAdvertiser } from "../inference/model_adverts.ts";
import { BundleFiles } from "../mcm/images/bundle_files.ts";
import { Deployments } from "../mcm/deployments.ts";
import { Images } from "../mcm/images/images.ts";
import { McmRecords } from "../mcm/mcm_records.ts";
import { NodeServices } from "../mcm/services/node_services.ts";
import type { DatabaseSync as Database } from "node:sqlite";
import { openDatabase } from "../storage/database.ts";
import { ModelFiles } from "../store/model_files.ts";
import { ModelRecords } from "../store/model_records.ts";
import { Provisioning } from "../store/provisioning.ts";
import { ModelRegistry } from "../store/registry.ts";
import { Transfers } from "../store/transfers.ts";
import { meshSources } from "../model_mesh/mod.ts";
import { VIA_HEADER } from "../tunnel/routing.ts";
import type { Settings } from "./config.ts";

/** The node's parts, built. */
export interface NodeDependencies {
  settings: Settings;
  /** When the node started (ms since the epoch). */
  startedAt: number;
  /** The port the node listens on: the configured one until the server is bound. */
  listening: { port: number };
  /**
   * The paths no microservice may take: filled with the mounted services' prefixes before the
   * node listens (deployment is built before the services it serves beside).
   */
  reserved: string[];
  identity: Identity;
  files: ModelFiles;
  registry: ModelRegistry;
  provisioning: Provisioning;
  /** The engine's owner, built even when inference is off (containers' usage is asked of it). */
  engine: InferenceService;
  /** The engine as the services see it: undefined when inference is off. */
  inference: InferenceService | undefined;
  images: Images;
  deployments: Deployments;
  linkLocal: LinkLocal;
  /** The hub link; undefined when the node has no hub. */
  hub: HubLink | undefined;
  /** The pipeline the services mount on (the hub link serves tunnelled requests with it). */
  pipeline: Pipeline;
}

/** The database and identity: a key file that is not a key stops the start, before recovery. */
async function openIdentity(settings: Settings, stack: AsyncDisposableStack) {
  const db = openDatabase(settings.dataDir);
  stack.defer(() => db.close());
  const identity = await Identity.open(settings.dataDir, db, {
    name: settings.nodeName,
    version: meta.version,
    trustedIssuers: settings.trustedIssuers,
  });
  return { db, identity };
}

/** The model store and the engine, the store recovered from an interrupted run. */
async function openStore(settings: Settings, db: Database, stack: AsyncDisposableStack) {
  const records = new ModelRecords(db);
  const files = await ModelFiles.open(settings.dataDir);
  stack.defer(() => files.close());
  const transfers = new Transfers();
  const registry = new ModelRegistry(records, files, transfers);
  const provisioning = new Provisioning(records, files, transfers, {
    maxFileBytes: settings.maxModelFileBytes,
    stallMs: settings.downloadStallSeconds * 1000,
    retries: settings.downloadRetries,
    downloadHosts: settings.downloadHosts,
  });
  const engine = new InferenceService(registry, {
    modelsDir: files.root,
    scriptsDir: `${settings.dataDir}/inference`,
    callerFilesDir: `${settings.dataDir}/mcm/storage`,
  }, settings.inference);
  files.beforeChange((id) => engine.beforeFileChange(id));
  const report = await registry.recover();
  if (
    report.removedPartials + report.removedOrphanFolders + report.promotedPending > 0 ||
    report.markedNotReady.length > 0
  ) {
    console.log(`recovered model store: ${JSON.stringify(report)}`);
  }
  return { files, registry, provisioning, engine };
}

/** An environment variable the node may read, else undefined. */
function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/**
 * Deployment, whose containers call back into the node: their calls are answered by `answer`
 * (NodeServices, built later: it needs link-local discovery, which describes the deployments).
 */
async function openMcm(
  settings: Settings,
  db: Database,
  parts: { identity: Identity; engine: InferenceService; listening: { port: number } },
  reserved: string[],
  answer: () => NodeServices,
) {
  const { identity, engine, listening } = parts;
  const records = new McmRecords(db);
  const bundleFiles = await BundleFiles.open(settings.dataDir);
  const images = new Images(records, bundleFiles, settings.mcm);
  const deployments = new Deployments(records, bundleFiles, images, settings.mcm, {
    nodeId: () => identity.nodeId,
    accountId: () => identity.accountId,
    port: () => listening.port,
    reservedPrefixes: reserved,
    readEnv,
    ownAddresses: () => Deno.networkInterfaces().map((i) => i.address),
    // The container's client takes its turn at the models (fair queuing between clients).
    answerCall: (container, call): Promise<unknown> =>
      answer().answer(call, container, records.container(container)?.client),
    inferenceUsage: (container) => {
      const caller = containerCaller(container);
      return engine.usage().has(caller) ? engine.usageOf(caller) : undefined;
    },
    forgetContainer: (container) => engine.forgetCaller(containerCaller(container)),
  });
  return { images, deployments, bundleFiles };
}

/** Link-local discovery describing this node, and the hub link when there is a hub. */
async function openDiscovery(
  settings: Settings,
  parts: {
    identity: Identity;
    deployments: Deployments;
    listening: { port: number };
    models: () => ModelsDescription;
  },
  pipeline: Pipeline,
) {
  const { identity, deployments, listening, models } = parts;
  const linkLocal = new LinkLocal(
    selfDescriber(
      identity,
      await machineCharacteristics(settings.dataDir, meta.version),
      () => localAddresses(settings.host, listening.port),
      () => deployments.services(),
      models,
    ),
    settings.discovery,
  );
  const hub = settings.hub
    ? new HubLink(settings.hub.url, {
      identity,
      describe: () => linkLocal.self(),
      serve: (request, origin) => Promise.resolve(pipeline.serve(request, origin)),
      serveParts: (parts, origin) => pipeline.serveParts(parts, origin),
      port: () => listening.port,
    })
    : undefined;
  return { linkLocal, hub };
}

/**
 * Builds the node's parts. What holds something open from the start (the database, the model
 * files) goes on `stack` here; what starts later is put there by startNode.
 */
export async function buildDependencies(
  settings: Settings,
  stack: AsyncDisposableStack,
): Promise<NodeDependencies> {
  const startedAt = Date.now();
  const listening = { port: settings.port };
  const reserved: string[] = [];
  const pipeline = new Pipeline({
    // Only asked for local routes: reading a header makes Deno build the whole header list.
    isRemote: ({ request }) => request.headers.has(VIA_HEADER),
  });
  const { db, identity } = await openIdentity(settings, stack);
  const store = await openStore(settings, db, stack);
  const { engine } = store;
  const inference = settings.inference.enabled ? engine : undefined;
  // Filled below: the containers' calls reach it only once the node is up.
  const answering: { services?: NodeServices } = {};
  const mcm = await openMcm(
    settings,
    db,
    { identity, engine, listening },
    reserved,
    () => answering.services!,
  );
  const discovery = await openDiscovery(
    settings,
    {
      identity,
      deployments: mcm.deployments,
      listening,
      models: modelsAdvertiser({
        registry: store.registry,
        loaded: (id) => engine.loaded(id),
        backend: () => inference?.backend,
      }),
    },
    pipeline,
  );
  // A download given a sha256 asks the LAN's nodes of the account first (issue 37).
  store.provisioning.useMesh(meshSources({
    mesh: () => settings.inference.mesh,
    identity,
    members: () => discovery.linkLocal.members(),
    hub: discovery.hub,
    storePrefix: settings.storePrefixes[0] ?? "/ai/store/v1",
    stallMs: settings.downloadStallSeconds * 1000,
  }));
  answering.services = new NodeServices(
    identity,
    discovery.linkLocal,
    discovery.hub,
    inference,
    store.files.root,
    (container) => mcm.bundleFiles.storagePath(container),
  );
  return {
    settings,
    startedAt,
    listening,
    reserved,
    identity,
    ...store,
    inference,
    ...mcm,
    ...discovery,
    pipeline,
  };
}
