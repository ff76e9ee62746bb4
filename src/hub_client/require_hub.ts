/**
 * The hub a request needs: the account and proximity listings, the bep and the sep come from the
 * hub, so a node without one answers those requests 503 with the setting to change.
 *
 * @module
 */
import { Unavailable } from "../errors/mod.ts";
import type { HubLink } from "./hub_link.ts";

/** The node's hub link, or Unavailable (503) naming `what` when no hub is configured. */
export function requireHub(hub: HubLink | undefined, what: string): HubLink {
  if (!hub) {
    throw new Unavailable(
      `${what} needs a hub, and none is configured: set hub.url in the node's config`,
    );
  }
  return hub;
}
