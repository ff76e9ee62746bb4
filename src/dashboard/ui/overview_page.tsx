/**
 * The overview: who the node is, how long it has run, its models and disk, its microservices.
 *
 * @module
 */
import { describeInstall } from "../../inference/install_words.ts";
import { dashboardClient } from "../../sdk/clients.ts";
import { diskMeterLevels } from "./explain.ts";
import { bytes, duration, when } from "./format.ts";
import { connection } from "./node_api.ts";
import { Notice, usePolling } from "./widgets.tsx";

async function loadStatus() {
  const { data, error } = await dashboardClient(connection()).GET("/dashboard/v1/status");
  if (!data) throw error;
  return data;
}

type Status = Awaited<ReturnType<typeof loadStatus>>;

/**
 * What the engine computes on, as an operator wants it in one line: the backend and why, its
 * devices and free VRAM, or why the backend asked for cannot run.
 */
function compute(inference: Status["inference"]): string {
  if (!inference) return "inference off";
  if (inference.error) return `${inference.gpu || "cpu"}: cannot run (${inference.error})`;
  if (inference.installing) return describeInstall(inference.installing);
  if (!inference.backend) return `detecting (inference.gpu ${JSON.stringify(inference.gpu)})`;
  const devices = inference.devices?.length ? ` on ${inference.devices.join(", ")}` : "";
  const vram = inference.vramFreeBytes !== undefined && inference.vramTotalBytes
    ? `, ${bytes(inference.vramFreeBytes)} VRAM free of ${bytes(inference.vramTotalBytes)}`
    : "";
  const why = inference.reason ? ` (${inference.reason})` : "";
  return `${inference.backend}${devices}${vram}${why}`;
}

/** The overview page. */
export function OverviewPage() {
  const { data: status, error } = usePolling(loadStatus, 5000);
  if (error) return <Notice kind="error">{error}</Notice>;
  if (!status) return <Notice>Loading…</Notice>;
  const used = status.disk.totalBytes - status.disk.freeBytes;
  return (
    <section aria-labelledby="overview-title">
      <h2 id="overview-title">Overview</h2>
      <dl class="facts">
        <dt>Node</dt>
        <dd class="mono" data-testid="node-id">{status.nodeId}</dd>
        <dt>Name</dt>
        <dd>{status.name}</dd>
        <dt>Account</dt>
        <dd>{status.accountId || "none (not associated)"}</dd>
        <dt>Version</dt>
        <dd>{status.version}</dd>
        <dt>Up</dt>
        <dd>
          {duration(status.uptimeSeconds)} (since {when(status.startedAt)} UTC)
        </dd>
        <dt>Models</dt>
        <dd data-testid="models-summary">
          {status.models.count} ({status.models.ready} ready), {bytes(status.models.bytes)}
        </dd>
        <dt>Disk</dt>
        <dd>
          {bytes(status.disk.freeBytes)} free of {bytes(status.disk.totalBytes)}
          {status.disk.totalBytes > 0 && (
            <meter
              aria-label="disk used"
              min={0}
              max={status.disk.totalBytes}
              value={used}
              {...diskMeterLevels(status.disk.totalBytes)}
            />
          )}
        </dd>
        <dt>Microservices</dt>
        <dd>{status.containers.started} of {status.containers.count} running</dd>
        <dt>Compute</dt>
        <dd data-testid="compute">{compute(status.inference)}</dd>
      </dl>
    </section>
  );
}
