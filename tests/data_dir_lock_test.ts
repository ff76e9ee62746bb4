/**
 * One node per data directory: a second `serve` on a directory in use exits at once with one line
 * naming the directory and the other node's pid, touching nothing; the lock goes with the first.
 */
import assert from "node:assert/strict";
import { readyModel } from "./helpers/store.ts";
import { ggufBytes, listFiles, runEdgenode, startTestNode, withTempDir } from "../testing/node.ts";

Deno.test("a second node on the same data directory exits with one line and touches nothing", () =>
  withTempDir(async (dataDir) => {
    {
      await using first = await startTestNode({ dataDir });
      await readyModel(first, "m", ggufBytes(2000));
      const before = await listFiles(dataDir);
      const second = await runEdgenode([
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--data-dir",
        dataDir,
      ]);
      assert.equal(second.code, 2, second.stderr);
      const lines = second.stderr.trim().split("\n");
      assert.equal(lines.length, 1, second.stderr);
      assert.match(
        lines[0],
        new RegExp(`${dataDir}.* in use by another edgenode \\(pid ${first.launcherPid}\\)`),
      );
      assert.deepEqual(await listFiles(dataDir), before, "the second start changed nothing");
      const still = await fetch(`${first.storeUrl}/models/m`);
      assert.equal((await still.json()).readyToUse, true, "the first node serves on");
    }
    // The lock went with the first node: a new one starts.
    await using next = await startTestNode({ dataDir });
    assert.equal((await fetch(`${next.storeUrl}/models/m`)).status, 200);
  }));
