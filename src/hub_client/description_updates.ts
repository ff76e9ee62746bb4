/**
 * When the hub link sends the node's description again (spec/hub.yaml, `update`): at once
 * for a change that matters to a listing, rarely for the figures that change with every request.
 *
 * @module
 */
import type { GpsPoint } from "../../gen/hub/validators.ts";
import type { NodeDescription } from "../../gen/mds/validators.ts";

/**
 * A model's free sequences and queue depth change with every request: a change of those alone
 * is sent at most this often (any other change of the description within a second).
 */
export const LIVE_FIGURES_MS = 10_000;

/** The description without the figures that change with every request. */
function withoutLiveFigures(node: NodeDescription): NodeDescription {
  if (!node.models) return node;
  return { ...node, models: node.models.map(({ freeSlots: _, queued: __, ...model }) => model) };
}

/**
 * Which descriptions (and fixes) the hub is sent: every change, but a change of the models' live
 * figures alone at most every LIVE_FIGURES_MS, so that a busy node does not update the hub (and
 * the hub its cluster) with every request.
 */
export class DescriptionUpdates {
  #sent = { state: "", lasting: "", at: -Infinity };

  /** Whether `node` and `gps` differ from what was sent in a way worth sending at `now`. */
  due(node: NodeDescription, gps: GpsPoint | undefined, now = Date.now()): boolean {
    if (JSON.stringify([node, gps]) === this.#sent.state) return false;
    const onlyLive = JSON.stringify([withoutLiveFigures(node), gps]) === this.#sent.lasting;
    return !onlyLive || now - this.#sent.at >= LIVE_FIGURES_MS;
  }

  /** Records `node` and `gps` as sent at `now`. */
  sent(node: NodeDescription, gps: GpsPoint | undefined, now = Date.now()): void {
    this.#sent = {
      state: JSON.stringify([node, gps]),
      lasting: JSON.stringify([withoutLiveFigures(node), gps]),
      at: now,
    };
  }
}
