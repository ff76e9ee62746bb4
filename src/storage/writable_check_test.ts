import assert from "node:assert/strict";
import { osReason } from "../config/file_errors.ts";
import { checkWritable, unwritable } from "./writable_check.ts";

Deno.test("a writable data directory passes, probes leave nothing behind, links are not followed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/models/m`, { recursive: true });
    await Deno.writeTextFile(`${dir}/edgenode.db`, "");
    await Deno.symlink("/proc", `${dir}/models/elsewhere`);
    await checkWritable(dir, { trees: ["models", "mcm"], files: ["edgenode.db", "absent.db"] });
    const left = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(left, ["edgenode.db", "models"]);
    assert.deepEqual([...Deno.readDirSync(`${dir}/models/m`)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("what cannot be written is named with the fix that fits the reason", () => {
  const line = (message: string) => unwritable("/d", new Error(message)).message;
  assert.equal(
    osReason(new Error("Permission denied (os error 13): open '/d/x'")),
    "Permission denied",
  );
  assert.equal(
    line("Permission denied (os error 13): tmpfile"),
    "/d cannot be written (Permission denied): give it to the user edgenode runs as (chown -R), " +
      "or pass another --data-dir",
  );
  assert.equal(
    line("Read-only file system (os error 30): tmpfile"),
    "/d is on a read-only file system: mount it read-write, or pass another --data-dir",
  );
  assert.equal(
    line("No space left on device (os error 28): tmpfile"),
    "/d cannot be written (No space left on device): free some space, or pass another --data-dir",
  );
});
