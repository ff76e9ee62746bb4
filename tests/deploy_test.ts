/**
 * Installing and operating a node as a user does. deploy/install.sh, with only Node.js and npm
 * on the PATH (deno comes from npm), installs deno, the bundle, the `edgenode` command, the data
 * directory and the systemd unit into a staging folder, and again without harm; the installed
 * command runs a node. The unit's own ExecStart line, parsed from the file and run as systemd
 * would (its paths moved into the staging folder, its environment only, no User=), starts a node
 * that serves the registry and JSON-RPC; its flags are the single executable's; `systemd-analyze
 * verify` finds nothing to say about it. And `deno task install-cli` puts an `edgenode` on the
 * PATH that runs the checkout.
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { EXECUTABLE_FLAGS } from "../src/program/executable_flags.ts";
import { debianPackage, onPath } from "../testing/debian.ts";
import { startListening, withTempDir } from "../testing/node.ts";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const UNIT = `${ROOT}/deploy/edgenode.service`;
const LIB = "/usr/local/lib/edgenode";
const CONFIG = {
  apiKey: "a-test-key-of-enough-length",
  host: "127.0.0.1",
  port: 0,
  discovery: { mdns: false },
};

/** A program's full path on PATH, or undefined. */
async function which(program: string, path?: string): Promise<string | undefined> {
  const output = await new Deno.Command("sh", {
    args: ["-c", `command -v ${program}`],
    env: path ? { PATH: path } : {},
    stdout: "piped",
  }).output();
  return output.success ? new TextDecoder().decode(output.stdout).trim() : undefined;
}

/** Runs a command to its end; its output and exit code. */
async function run(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string }> {
  const output = await new Deno.Command(command, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    out: decoder.decode(output.stdout) + decoder.decode(output.stderr),
  };
}

/** The entries of a systemd unit file, continuation lines joined, by section and key. */
function unitEntries(text: string): Map<string, string[]> {
  const entries = new Map<string, string[]>();
  let section = "";
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const line of lines.map((l) => l.trim())) {
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1];
      continue;
    }
    const at = line.indexOf("=");
    const key = `${section}.${line.slice(0, at)}`;
    entries.set(key, [...entries.get(key) ?? [], line.slice(at + 1)]);
  }
  return entries;
}

/** A node answers: the registry's listing, and getMe over JSON-RPC. */
async function assertServes(url: string): Promise<void> {
  const models = await fetch(`${url}/ai/store/v1/models`);
  assert.equal(models.status, 200);
  await models.body?.cancel();
  const me = await fetch(`${url}/jsonrpc/v1`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getMe", params: [] }),
  });
  assert.match((await me.json()).result.nodeId, /^[0-9a-f]{56}$/);
}

Deno.test("the unit runs the bundle with exactly the single executable's flags", async () => {
  const entries = unitEntries(await Deno.readTextFile(UNIT));
  const [execStart] = entries.get("Service.ExecStart")!;
  assert.doesNotMatch(execStart, /["'$]/, "no quoting or variables to interpret");
  assert.deepEqual(execStart.split(/\s+/), [
    `${LIB}/deno`,
    "run",
    ...EXECUTABLE_FLAGS,
    "--no-config",
    `${LIB}/edgenode.js`,
    "serve",
  ]);
  assert.deepEqual(entries.get("Service.User"), ["edgenode"]);
  assert.deepEqual(entries.get("Service.StateDirectory"), ["edgenode"]);
  assert.deepEqual(entries.get("Service.RestartPreventExitStatus"), ["2"]);
});

Deno.test("deploy/install.sh with only Node.js and npm; the command and the unit's ExecStart serve", async (t) => {
  await withTempDir(async (dir) => {
    const stage = `${dir}/stage`;
    // Node.js and npm, and the system's tools, but no deno.
    const npm = await which("npm");
    const node = await which("node");
    const path = [...new Set([npm, node].filter((p) => p).map((p) => dirname(p!)))]
      .concat(["/usr/bin", "/bin"]).join(":");
    const denoOnPath = await which("deno", path);
    const env: Record<string, string> = { PATH: path };
    if (!npm) {
      console.log("note: no npm here; install.sh is given this deno instead of fetching one");
      env.EDGENODE_DENO = Deno.execPath();
    } else if (denoOnPath) {
      console.log(`note: ${denoOnPath} is on the system PATH; install.sh takes it, not npm's`);
    }

    await t.step("installs, and again", async () => {
      const first = await run("sh", [`${ROOT}/deploy/install.sh`, "--destdir", stage], env);
      assert.equal(first.code, 0, first.out);
      if (npm && !denoOnPath) assert.match(first.out, /fetching deno 2\.9\.6 from npm/);
      const again = await run("sh", [`${ROOT}/deploy/install.sh`, "--destdir", stage], env);
      assert.equal(again.code, 0, again.out);
      assert.doesNotMatch(again.out, /fetching deno/, "the installed deno is kept");
      const version = await run(`${stage}${LIB}/deno`, ["--version"]);
      assert.match(version.out, /^deno 2\.9\.6 /);
      assert.equal((await Deno.stat(`${stage}/var/lib/edgenode`)).mode! & 0o777, 0o700);
      assert.equal(
        await Deno.readTextFile(`${stage}/etc/systemd/system/edgenode.service`),
        await Deno.readTextFile(UNIT),
        "the default prefix installs the unit as shipped",
      );
    });

    await t.step("the installed command runs a node", async () => {
      const version = await run(`${stage}/usr/local/bin/edgenode`, ["version"], { PATH: path });
      assert.equal(version.code, 0, version.out);
      assert.match(version.out, /^edgenode 0\.1\.0\ndeno {5}2\.9\.6\n/);
      await Deno.mkdir(`${dir}/data`);
      await Deno.writeTextFile(`${dir}/data/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
      const served = await startListening(`${stage}/usr/local/bin/edgenode`, [
        "serve",
        "--data-dir",
        `${dir}/data`,
      ], { PATH: path });
      try {
        await assertServes(served.url);
      } finally {
        assert.equal(await served.stop(), 0);
      }
    });

    // The installed unit, as systemd would run it: its paths in the staging folder.
    const moved = (text: string) =>
      text.replaceAll(LIB, `${stage}${LIB}`)
        .replaceAll("/var/lib/edgenode", `${stage}/var/lib/edgenode`)
        .replaceAll("/var/cache/edgenode", `${dir}/cache`);
    const unitText = moved(await Deno.readTextFile(`${stage}/etc/systemd/system/edgenode.service`));

    await t.step("the unit's ExecStart serves", async () => {
      const entries = unitEntries(unitText);
      const [program, ...args] = entries.get("Service.ExecStart")![0].split(/\s+/);
      const unitEnv = Object.fromEntries(
        (entries.get("Service.Environment") ?? []).map((e) => e.split(/=(.*)/s).slice(0, 2)),
      );
      const dataDir = unitEnv.EDGENODE_DATA_DIR;
      assert.equal(dataDir, `${stage}/var/lib/edgenode`);
      // The data directory's config stands in for a user's edits: an address of the test's.
      await Deno.writeTextFile(`${dataDir}/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
      await Deno.mkdir(`${dir}/cache`);
      // systemd's environment for a service, and nothing else: the unit's, the user's HOME,
      // a plain PATH.
      const served = await startListening("env", [
        "-i",
        ...Object.entries({ ...unitEnv, HOME: dataDir, PATH: "/usr/bin:/bin" })
          .map(([name, value]) => `${name}=${value}`),
        program,
        ...args,
      ]);
      try {
        await assertServes(served.url);
        assert.doesNotMatch(served.output(), /error|warning/i, served.output());
      } finally {
        assert.equal(await served.stop(), 0, "SIGTERM stops it cleanly (systemctl stop)");
      }
    });

    await t.step("systemd-analyze verify accepts the unit", async () => {
      const analyzer = await debianPackage("systemd", () => onPath("systemd-analyze"));
      if (analyzer !== true) {
        console.log(`deploy_test: systemd-analyze verify skipped: ${analyzer.missing}`);
        return;
      }
      await Deno.writeTextFile(`${dir}/edgenode.service`, unitText);
      const verified = await run("systemd-analyze", ["verify", `${dir}/edgenode.service`]);
      assert.deepEqual(verified, { code: 0, out: "" });
    });
  });
});

/** Whether this runs as root, with mount namespaces and setpriv: the system install can run. */
async function canInstallForReal(): Promise<string | undefined> {
  if ((await run("id", ["-u"])).out.trim() !== "0") return "not root";
  if ((await run("unshare", ["-m", "true"]).catch(() => ({ code: 1 }))).code !== 0) {
    return "no mount namespaces (unshare -m)";
  }
  if (!(await which("setpriv"))) return "no setpriv";
}

/**
 * As root, in a mount namespace of its own where /etc, /usr/local, /var/lib and /var/cache are
 * private copies or empty folders: install.sh as a user runs it (no options; the system user is
 * made in the copy of /etc), then the unit's ExecStart as that user, with the unit's environment
 * and the folders systemd would make. Nothing of it is seen outside.
 */
const SYSTEM_INSTALL = String.raw`set -eu
work=$1
shift
cp -a /etc "$work/etc"
mount --bind "$work/etc" /etc
for dir in /usr/local /var/lib /var/cache; do
  mkdir -p "$work$dir"
  mount --bind "$work$dir" "$dir"
done
PATH=/usr/sbin:/usr/bin:/sbin:/bin sh "$ROOT/deploy/install.sh"
PATH=/usr/sbin:/usr/bin:/sbin:/bin sh "$ROOT/deploy/install.sh" >/dev/null
printf '%s' "$CONFIG" > /var/lib/edgenode/config.json
chown edgenode: /var/lib/edgenode/config.json
install -d -o edgenode -g edgenode -m 0700 /var/cache/edgenode
cd /
exec setpriv --reuid=edgenode --regid=edgenode --init-groups env -i "$@"
`;

Deno.test("as root: install.sh makes the user, and the unit's ExecStart serves as that user", async () => {
  const why = await canInstallForReal();
  if (why) {
    console.log(`note: the system install was not run here (${why}); the staged one was`);
    return;
  }
  await withTempDir(async (dir) => {
    const entries = unitEntries(await Deno.readTextFile(UNIT));
    const [program, ...args] = entries.get("Service.ExecStart")![0].split(/\s+/);
    const served = await startListening("unshare", [
      "-m",
      "sh",
      "-c",
      SYSTEM_INSTALL,
      "sh",
      dir,
      ...entries.get("Service.Environment")!,
      "HOME=/var/lib/edgenode",
      "PATH=/usr/bin:/bin",
      program,
      ...args,
    ], { ROOT, CONFIG: JSON.stringify(CONFIG) });
    try {
      assert.match(served.output(), /created the system user edgenode/);
      await assertServes(served.url);
    } finally {
      assert.equal(await served.stop(), 0);
    }
    // The user exists only in the namespace: outside, its files show its bare uid.
    const { uid, mode } = await Deno.stat(`${dir}/var/lib/edgenode/edgenode.db`);
    assert.ok(uid !== 0 && (mode! & 0o777) === 0o600, `the node ran as edgenode (uid ${uid})`);
    assert.equal((await run("id", ["edgenode"])).code, 1, "no user edgenode outside");
  });
});

Deno.test("deno task install-cli puts an edgenode command on the PATH that runs the checkout", () =>
  withTempDir(async (dir) => {
    const install = () =>
      run(Deno.execPath(), [
        "task",
        "--config",
        `${ROOT}/deno.json`,
        "install-cli",
        "--bin-dir",
        `${dir}/bin`,
      ]);
    const installed = await install();
    assert.equal(installed.code, 0, installed.out);
    assert.match(installed.out, new RegExp(`installed ${dir}/bin/edgenode`));
    assert.equal((await install()).code, 0, "installs again over its own script");

    // A PATH of the system's tools: the command names its own deno.
    const env = { PATH: `${dir}/bin:/usr/bin:/bin` };
    const version = await run("sh", ["-c", "cd / && edgenode version"], env);
    assert.equal(version.code, 0, version.out);
    // The checkout's own commit, read from its .git wherever the command runs ("unknown" in
    // a copy without .git).
    assert.match(version.out, /^edgenode 0\.1\.0\n[^]*\ncommit {3}([0-9a-f]{40}|unknown)\n$/);
    await Deno.mkdir(`${dir}/data`);
    await Deno.writeTextFile(`${dir}/data/config.json`, JSON.stringify(CONFIG), { mode: 0o600 });
    const served = await startListening("sh", [
      "-c",
      `exec edgenode serve --data-dir ${dir}/data`,
    ], env);
    try {
      await assertServes(served.url);
    } finally {
      await served.stop();
    }

    await Deno.writeTextFile(`${dir}/bin/edgenode`, "#!/bin/sh\necho someone else's\n");
    const refused = await install();
    assert.equal(refused.code, 2);
    assert.match(refused.out, /bin\/edgenode exists and was not written by install-cli/);
  }));
