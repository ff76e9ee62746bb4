/**
 * The shape of the mesh services' handlers (mds here, insight above it): both answer from the
 * same three things, who this node is, its link-local network and its hub when it has one.
 *
 * @module
 */
import type { LinkLocal } from "../discovery/link_local.ts";
import type { Handlers, RouteSpec } from "../http/routes.ts";
import type { HubLink } from "../hub_client/hub_link.ts";
import type { Identity } from "../identity/identity.ts";

/** Builds a mesh service's handlers of the route table `T` from the node's mesh state. */
export type MeshHandlers<T extends Record<string, RouteSpec>> = (
  identity: Identity,
  linkLocal: LinkLocal,
  hub: HubLink | undefined,
) => Handlers<T>;
