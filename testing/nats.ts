/**
 * A real nats-server with JetStream for the hub cluster tests (`edgenode hub --nats`), from
 * Debian's package: on a free port of 127.0.0.1, with a user and password, a file store that
 * outlives a kill, and a guard that takes the server with it when the test process goes away.
 *
 * @module
 */
import { debianPackage } from "./debian.ts";

/** A program run by {@link spawnGuarded}. */
export interface GuardedProcess {
  /** The program's own pid (not the guard shell's). */
  pid: number;
  /** Resolves with the program's exit code once it has exited (137 when killed). */
  exited: Promise<number>;
  /** SIGKILLs the program (unless it has exited) and waits until it has. */
  kill(): Promise<number>;
}

/**
 * The guard: runs the program in the background, prints its pid, and kills it with SIGKILL when
 * its own stdin (a pipe from the test process) ends, which the kernel does when the test process
 * dies however it dies. The shell then waits for the program, so its exit is the program's.
 * An asynchronous list reads /dev/null unless redirected, hence the copy of stdin on fd 3. The
 * shell's own messages (such as "Killed") go to the log too.
 * (prctl's parent-death signal would not do: it fires when the spawning *thread* ends, and
 * `deno test` runs each test file on a thread of its own.)
 */
const GUARD = `log=$1; shift
exec 2>>"$log"
"$@" >>"$log" 2>&1 </dev/null &
child=$!
echo "$child"
exec 3<&0
(read _ <&3; kill -KILL "$child" 2>/dev/null) &
watcher=$!
exec 3<&-
wait "$child"
status=$?
kill "$watcher" 2>/dev/null
exit "$status"`;

/**
 * Starts `program args` with its output appended to `logFile`, so that it cannot outlive the
 * test process (see GUARD): a test that is killed leaves no server behind.
 */
export async function spawnGuarded(
  program: string,
  args: string[],
  logFile: string,
): Promise<GuardedProcess> {
  const shell = new Deno.Command("sh", {
    args: ["-c", GUARD, "guard", logFile, program, ...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const stdin = shell.stdin.getWriter();
  let printed = "";
  const firstLine = Promise.withResolvers<string>();
  const drained = (async () => {
    for await (const chunk of shell.stdout.pipeThrough(new TextDecoderStream())) {
      printed += chunk;
      if (printed.includes("\n")) firstLine.resolve(printed.split("\n")[0]);
    }
    firstLine.resolve(printed);
  })();
  const exited = Promise.all([shell.status, drained]).then(([status]) => status.code);
  const pid = Number(await firstLine.promise);
  if (!Number.isInteger(pid) || pid <= 0) {
    await stdin.close().catch(() => {});
    await exited;
    throw new Error(`the guard shell printed no pid for ${program}: ${JSON.stringify(printed)}`);
  }
  let killed: Promise<number> | undefined;
  return {
    pid,
    exited,
    kill() {
      // The guard's watcher does the killing: the same path as when the test process dies.
      killed ??= stdin.close().catch(() => {}).then(() => exited);
      return killed;
    },
  };
}

/**
 * Where `name` is installed: on the PATH, or in the sbin folders Debian puts servers in (a user
 * other than root often lacks them on the PATH); undefined when nowhere.
 */
export async function systemProgram(name: string): Promise<string | undefined> {
  const folders = [
    ...(Deno.env.get("PATH") ?? "").split(":").filter(Boolean),
    "/usr/local/sbin",
    "/usr/sbin",
    "/sbin",
  ];
  for (const folder of folders) {
    const path = `${folder}/${name}`;
    const info = await Deno.stat(path).catch(() => undefined);
    if (info?.isFile && (info.mode ?? 0o111) & 0o111) return path;
  }
  return undefined;
}

/** Installs Debian package `name` for program `name` if missing: its path, or why not. */
export async function debianServer(name: string): Promise<string | { skip: string }> {
  const installed = await debianPackage(name, async () => !!await systemProgram(name));
  if (installed !== true) return { skip: `no ${name}: ${installed.missing}` };
  return (await systemProgram(name))!;
}

/** A port of 127.0.0.1 that was free a moment ago. */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

/** The last lines of a log file, for error messages. */
export async function logTail(path: string, lines = 20): Promise<string> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}

/** A real nats-server with JetStream, for the cluster tests. */
export interface TestNats extends AsyncDisposable {
  /** nats://127.0.0.1:<port> */
  url: string;
  port: number;
  user: string;
  password: string;
  /** A 0600 file holding the password (hubs read credentials from files, never argv). */
  passwordFile: string;
  /** The running server's pid (a new one after start()); for SIGSTOP and the like. */
  readonly pid: number;
  /** SIGKILLs the server (store dir kept). */
  kill(): Promise<void>;
  /** Starts it again on the same port and store dir; resolves once it accepts clients. */
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

/** How long a start may take before it counts as failed. */
const START_TIMEOUT_MS = 20_000;

/**
 * Starts nats-server (-js, store dir under `dir`, user/password auth, a free port on 127.0.0.1),
 * or says why it cannot. The password is only in 0600 files (the config and `passwordFile`),
 * never in argv where `ps` would show it.
 */
export async function startTestNats(dir: string): Promise<TestNats | { skip: string }> {
  const program = await debianServer("nats-server");
  if (typeof program !== "string") return program;
  const home = await Deno.makeTempDir({ dir, prefix: "nats-" });
  const user = "edgenode-hub";
  const password = Array.from(
    crypto.getRandomValues(new Uint8Array(18)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
  const passwordFile = `${home}/password`;
  // No newline: the file holds the password and nothing else.
  await Deno.writeTextFile(passwordFile, password, { mode: 0o600 });
  const configFile = `${home}/nats.conf`;
  const logFile = `${home}/nats.log`;

  let port = 0;
  let server: GuardedProcess | undefined;
  const launch = async () => {
    // JSON strings are valid nats-server config strings (double quotes, backslash escapes).
    await Deno.writeTextFile(
      configFile,
      [
        `listen: ${JSON.stringify(`127.0.0.1:${port}`)}`,
        `server_name: ${JSON.stringify(`edgenode-test-${port}`)}`,
        `jetstream {`,
        `  store_dir: ${JSON.stringify(`${home}/store`)}`,
        `}`,
        `authorization {`,
        `  user: ${JSON.stringify(user)}`,
        `  password: ${JSON.stringify(password)}`,
        `}`,
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
    await Deno.writeTextFile(logFile, `--- start on port ${port}\n`, { append: true });
    server = await spawnGuarded(program, ["-c", configFile], logFile);
    const ready = await natsReady(port, user, password, server);
    if (ready !== true) {
      await server.kill();
      server = undefined;
      throw new Error(`nats-server on port ${port} ${ready}:\n${await logTail(logFile)}`);
    }
  };

  // The free port may be taken between the probe and the server's bind: try a few.
  for (let attempt = 1;; attempt++) {
    port = freePort();
    try {
      await launch();
      break;
    } catch (error) {
      if (attempt >= 3) {
        await Deno.remove(home, { recursive: true }).catch(() => {});
        throw error;
      }
    }
  }

  const kill = async () => {
    const running = server;
    server = undefined;
    await running?.kill();
  };
  const stop = async () => {
    await kill();
    await Deno.remove(home, { recursive: true }).catch(() => {});
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    user,
    password,
    passwordFile,
    get pid() {
      if (!server) throw new Error("nats-server is not running");
      return server.pid;
    },
    kill,
    async start() {
      if (server) throw new Error("nats-server is running already");
      // The same port: a client that reconnects must find it where it was.
      await launch();
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Whether the server on `port` serves an authenticated client: its INFO line, then CONNECT with
 * the credentials and a PING answered by PONG (a refused login gets -ERR instead). True, or what
 * went wrong by the deadline.
 */
async function natsReady(
  port: number,
  user: string,
  password: string,
  server: GuardedProcess,
): Promise<true | string> {
  let exitCode: number | undefined;
  server.exited.then((code) => exitCode = code);
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last = "never answered";
  while (Date.now() < deadline) {
    if (exitCode !== undefined) return `exited with ${exitCode} before accepting clients`;
    const answer = await handshake(port, user, password).catch((error) => String(error));
    if (answer === true) return true;
    last = answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return `accepted no client in ${START_TIMEOUT_MS / 1000} s (last: ${last})`;
}

async function handshake(port: number, user: string, password: string): Promise<true | string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const reader = readLines(conn);
    const info = await reader.next();
    if (!info.startsWith("INFO ")) return `first line ${JSON.stringify(info)}`;
    const connect = JSON.stringify({ user, pass: password, verbose: false, pedantic: false });
    await write(conn, `CONNECT ${connect}\r\nPING\r\n`);
    const reply = await reader.next();
    return reply === "PONG" ? true : `answer ${JSON.stringify(reply)}`;
  } finally {
    conn.close();
  }
}

/** Reads CRLF-ended lines from `conn`, each within 2 s. */
function readLines(conn: Deno.Conn): { next(): Promise<string> } {
  let buffered = "";
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(4096);
  return {
    async next() {
      const deadline = Date.now() + 2_000;
      while (!buffered.includes("\r\n")) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const timeout = new Promise<"timeout">((resolve) => {
          timer = setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now()));
        });
        const read = await Promise.race([conn.read(buffer), timeout]).finally(() =>
          clearTimeout(timer)
        );
        if (read === "timeout") throw new Error("no line in 2 s");
        if (read === null) throw new Error("closed");
        buffered += decoder.decode(buffer.subarray(0, read), { stream: true });
      }
      const end = buffered.indexOf("\r\n");
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      return line;
    },
  };
}

async function write(conn: Deno.Conn, text: string): Promise<void> {
  const bytes = new TextEncoder().encode(text);
  for (let written = 0; written < bytes.length;) {
    written += await conn.write(bytes.subarray(written));
  }
}
