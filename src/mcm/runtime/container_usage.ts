/**
 * What the node knows of a container's use of its process, from the usage events of its
 * client's process (sandbox/group_frames.ts): the latest figures and their trend over the last
 * few reports. It names the container that brought a shared process down (process_blame.ts) and
 * is shown in the container's record.
 *
 * @module
 */

/** A container's latest figures and their trend. */
export interface ContainerUsage {
  /** Its memory as its process measured it (heap and external), bytes. */
  memoryBytes: number;
  /** Its CPU time charged so far in its process, microseconds. */
  cpuMicros: number;
  /** Its outbound requests in flight (unknown for a process of its own). */
  outboundInFlight?: number;
  /** How much its memory grew over the last few reports (negative: it shrank), bytes. */
  memoryGrowthBytes: number;
  /** Its CPU time over the last few reports, as a share of one core (0.5: half a core). */
  cpuShare: number;
  /** When the latest report came, Unix milliseconds. */
  at: number;
}

/** How many reports the trend spans (about 3 s at one report every 500 ms). */
const KEPT = 6;

interface Sample {
  at: number;
  memory: number;
  cpu: number;
  outbound: number;
}

/** The last few reports of one container. */
export class UsageHistory {
  readonly #samples: Sample[] = [];

  /** Adds a report. */
  record(memory: number, cpu: number, outbound: number, at = Date.now()): void {
    this.#samples.push({ at, memory, cpu, outbound });
    if (this.#samples.length > KEPT) this.#samples.shift();
  }

  /** The latest figures and their trend; undefined before the first report. */
  latest(): ContainerUsage | undefined {
    const last = this.#samples.at(-1);
    if (!last) return undefined;
    const first = this.#samples[0];
    const span = last.at - first.at;
    return {
      memoryBytes: last.memory,
      cpuMicros: last.cpu,
      outboundInFlight: last.outbound,
      memoryGrowthBytes: last.memory - first.memory,
      cpuShare: span > 0 ? Math.max(0, last.cpu - first.cpu) / (span * 1000) : 0,
      at: last.at,
    };
  }
}
