/**
 * The record a container start request asks for (spec/mcm.yaml, "Containers"), after checking
 * everything that can be checked before a process starts: its base path and alias, which no
 * other container and none of the node's own paths may hold, and its image.
 *
 * @module
 */
import type { StartContainerRequest } from "../../gen/mcm/validators.ts";
import { Conflict } from "../errors/mod.ts";
import type { Caller } from "./caller.ts";
import { checkedBasePath } from "./runtime/container_env.ts";
import type { Images } from "./images/images.ts";
import type { ContainerRecord, McmRecords } from "./mcm_records.ts";

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What planning a container looks at. */
export interface PlanSources {
  records: McmRecords;
  images: Images;
  /** The node's default heap limit (mcm.memoryMb). */
  memoryMb: number;
  /** Path prefixes the node serves itself: no alias may shadow them. */
  reservedPrefixes: string[];
}

/** The record a start request asks for; Conflict or another API error when it cannot be. */
export function plannedContainer(
  sources: PlanSources,
  caller: Caller,
  request: StartContainerRequest,
): ContainerRecord {
  const env = request.env ?? {};
  const given = checkedBasePath(env, request.name, sources.memoryMb);
  const image = sources.images.find(caller, request.image);
  const id = `${caller.client}-${request.name}`;
  const segment = sources.records.segmentOf(
    caller.client,
    UUID_PATTERN.test(caller.client) ? caller.client.toLowerCase() : undefined,
  );
  // A container's env as GET answers it, posted back (a restart, `deploy --keep-env`), is the
  // same deployment: its served path already starts with the client's segment.
  const requested = given.startsWith(`/${segment}/`) ? given.slice(segment.length + 1) : given;
  const alias = env["MCM.API_ALIAS"] === "true" ? `/api${requested}` : null;
  const reserved = alias &&
    sources.reservedPrefixes.find((prefix) =>
      alias === prefix || alias.startsWith(`${prefix}/`) || prefix.startsWith(`${alias}/`)
    );
  if (reserved) {
    throw new Conflict(`the alias ${alias} would shadow the node's own ${reserved}`);
  }
  const basePath = `/${segment}${requested}`;
  const owner = sources.records.pathOwner(basePath, alias, id);
  if (owner) {
    const taken = owner.basePath === basePath || owner.alias === basePath ? basePath : alias;
    throw new Conflict(`container '${owner.id}' already serves ${taken}; pick another base path`);
  }
  return {
    id,
    client: caller.client,
    name: request.name,
    imageId: image.id,
    imageName: image.name,
    bundle: image.bundle,
    env: env["MCM.BASE_API_PATH"] === undefined ? env : { ...env, "MCM.BASE_API_PATH": requested },
    basePath,
    alias,
    created: Date.now(),
  };
}
