/**
 * The single executable's container process, `edgenode __container LAUNCH`: the process's own
 * permissions are the executable's (baked in), so its host runs in a worker narrowed to what
 * the node's LAUNCH says (JSON: `read`, the paths it may read; `write`, the one folder it may
 * write; `net`, the hosts it may reach, absent for any; `spare`, a warm spare whose host starts
 * at the take, narrowed to the container's bundle and storage), and the microservice in a
 * sibling worker with no permission at all, linked to the host by a port.
 *
 * A client's process (LAUNCH `group`) is one host worker, narrowed the same way, which starts a
 * sandboxed worker for each container the node opens in it (src/mcm/sandbox/host/tenant_host.ts).
 *
 * Both workers run the sandbox's own modules, embedded as text (bundles/sandbox_sources.ts, the
 * files `deno run` runs as a script), not the program's main module: a worker of the whole
 * program would load all of it again, twice per container, for code that needs a hundredth.
 *
 * @module
 */
import { HOST_SOURCE, WORKER_SOURCE } from "../../../../bundles/sandbox_sources.ts";
import type { TakeMessage } from "../channel_protocol.ts";
import { LINKED_SANDBOX } from "../host_protocol.ts";
import { NO_PERMISSIONS, workerPermissions } from "../../../program/permission_set.ts";
import { workerExit } from "../../../program/self_program.ts";

/** What the node allows one container process (src/mcm/runtime/container_process.ts, Launch). */
interface LaunchArgument {
  read: string[];
  write: string;
  net?: string[];
  /** A warm spare: the host starts at the take, narrowed to its container's files. */
  spare?: boolean;
  /**
   * A client's process (src/mcm/sandbox/host/tenant_host.ts): the host worker, narrowed to `read`
   * and `write`, starts each container's sandboxed worker itself.
   */
  group?: boolean;
}

/** A module URL for embedded source: a compiled binary loads no module it did not embed. */
function moduleUrl(source: string): string {
  return URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
}

/** Runs a container process's two workers; resolves with the process's exit code. */
export async function runContainerProcess(args: string[]): Promise<number> {
  const launch = JSON.parse(args[0]) as LaunchArgument;
  if (launch.group) {
    const host = new Worker(moduleUrl(HOST_SOURCE), {
      type: "module",
      name: "client's container host",
      deno: {
        permissions: workerPermissions({
          ...NO_PERMISSIONS,
          read: launch.read,
          write: [launch.write],
          net: launch.net ?? true,
          // The machine's addresses at each request (src/mcm/sandbox/network_policy.ts).
          sys: ["networkInterfaces"],
        }),
      },
    });
    host.postMessage({ group: WORKER_SOURCE });
    return await workerExit(host, "the client's container host", 70);
  }
  const link = new MessageChannel();
  // The sandbox first: it loads while the host starts.
  const sandbox = new Worker(moduleUrl(WORKER_SOURCE), {
    type: "module",
    name: LINKED_SANDBOX,
    deno: { permissions: "none" },
  });
  sandbox.postMessage({ host: link.port1 }, [link.port1]);
  const startHost = (read: string[], write: string, take?: TakeMessage) => {
    const host = new Worker(moduleUrl(HOST_SOURCE), {
      type: "module",
      name: "container host",
      deno: {
        permissions: workerPermissions({
          ...NO_PERMISSIONS,
          read,
          write: [write],
          net: launch.net ?? true,
          // The machine's addresses at each request (src/mcm/sandbox/network_policy.ts).
          sys: ["networkInterfaces"],
        }),
      },
    });
    host.postMessage({ sandbox: link.port2, take }, [link.port2]);
    return workerExit(host, "the container host", 70);
  };
  let hostExit: Promise<number>;
  if (!launch.spare) {
    hostExit = startHost(launch.read, launch.write);
  } else {
    // A warm spare: the host starts once the take names the container, narrowed to its files
    // (src/mcm/runtime/container_process.ts says why).
    hostExit = new Promise<TakeMessage | undefined>((resolve) => {
      link.port2.onmessage = (event) => resolve(event.data?.t === "take" ? event.data : undefined);
    }).then((take) => {
      link.port2.onmessage = null;
      return take ? startHost([take.bundle, take.storageDir], take.storageDir, take) : 0;
    });
  }
  return await Promise.race([hostExit, workerExit(sandbox, "the microservice's worker", 70)]);
}
