/**
 * The specs pass linters that know nothing of this repository: every OpenAPI file of spec/ is
 * linted by the pinned Redocly CLI with the repository's redocly.yaml (no error, no warning,
 * nothing ignored), and the OpenRPC file is validated against the OpenRPC meta-schema by
 * @open-rpc/schema-utils-js's validateOpenRPCDocument. Both run through npx, as Node programs;
 * without npx the tests are skipped, saying why.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { runToEnd } from "../testing/run.ts";

const REDOCLY = "@redocly/cli@2.77.0";
const OPENRPC_UTILS = "@open-rpc/schema-utils-js@2.2.1";
const ROOT = new URL("../", import.meta.url);
const SPEC_DIR = new URL("spec/", ROOT);

/** Why npx cannot be used here, or undefined when it can. */
async function npxMissing(): Promise<string | undefined> {
  try {
    const { success } = await new Deno.Command("npx", {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return success ? undefined : "`npx --version` failed";
  } catch (error) {
    return `npx cannot be run (${error instanceof Error ? error.message : error})`;
  }
}

const missing = await npxMissing();
if (missing) console.warn(`spec_lint_test: skipped, ${missing}: install Node.js to lint spec/`);

/** The spec files, by the kind of document each is. */
function specs(): { openapi: string[]; openrpc: string[] } {
  const found = { openapi: [] as string[], openrpc: [] as string[] };
  for (const entry of [...Deno.readDirSync(SPEC_DIR)].sort((a, b) => a.name < b.name ? -1 : 1)) {
    if (!entry.isFile || !/\.ya?ml$/.test(entry.name)) continue;
    const doc = parse(Deno.readTextFileSync(new URL(entry.name, SPEC_DIR))) as Record<
      string,
      unknown
    >;
    if (doc.openapi !== undefined) found.openapi.push(`spec/${entry.name}`);
    else if (doc.openrpc !== undefined) found.openrpc.push(`spec/${entry.name}`);
    else throw new Error(`spec/${entry.name} is neither OpenAPI nor OpenRPC`);
  }
  return found;
}

/** Runs npx with `args` in the repository's root. */
function npx(args: string[], stdin?: string) {
  return runToEnd("npx", {
    args: ["-y", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1", NPM_CONFIG_UPDATE_NOTIFIER: "false" },
  }, stdin);
}

Deno.test("redocly.yaml names every OpenAPI file of spec/ as an api", () => {
  const config = parse(Deno.readTextFileSync(new URL("redocly.yaml", ROOT))) as {
    apis?: Record<string, { root: string }>;
  };
  const roots = Object.values(config.apis ?? {}).map((api) => api.root).sort();
  assert.deepEqual(roots, specs().openapi);
});

Deno.test({
  name: `every OpenAPI file of spec/ passes ${REDOCLY} lint with redocly.yaml`,
  ignore: missing !== undefined,
  async fn() {
    const files = specs().openapi;
    assert.ok(files.length > 0, "spec/ has OpenAPI files");
    const failures: string[] = [];
    for (const file of files) {
      const { code, stdout, stderr } = await npx([
        REDOCLY,
        "lint",
        "--config",
        "redocly.yaml",
        "--format",
        "json",
        file,
      ]);
      let totals: { errors: number; warnings: number; ignored: number } | undefined;
      try {
        ({ totals } = JSON.parse(stdout));
      } catch {
        // Not JSON: a file that does not parse, or npx or the CLI failing; shown below.
      }
      if (
        code === 0 && totals?.errors === 0 && totals.warnings === 0 && totals.ignored === 0
      ) continue;
      // The same run again, in the CLI's own format for people.
      const readable = await npx([REDOCLY, "lint", "--config", "redocly.yaml", file]);
      failures.push(
        [
          `${file}: exit ${code}, ${JSON.stringify(totals ?? stdout)}`,
          readable.stdout,
          readable.stderr || stderr,
        ].join("\n"),
      );
    }
    if (failures.length > 0) console.error(failures.join("\n\n"));
    assert.deepEqual(failures.map((f) => f.split("\n")[0]), []);
  },
});

/**
 * A Node program that reads an OpenRPC document (JSON) from stdin and validates it. npx puts the
 * package's `node_modules/.bin` on PATH, not its modules on Node's search path: they are
 * required from beside that folder.
 */
const OPENRPC_CHECK = `
const path = require("node:path");
const fs = require("node:fs");
const bin = process.env.PATH.split(path.delimiter).find((dir) =>
  fs.existsSync(path.join(dir, "..", "@open-rpc", "schema-utils-js", "package.json"))
);
if (!bin) throw new Error("@open-rpc/schema-utils-js is not beside any PATH entry");
const utils = require(path.join(bin, "..", "@open-rpc", "schema-utils-js"));
const doc = JSON.parse(fs.readFileSync(0, "utf8"));
const result = utils.validateOpenRPCDocument(doc);
if (result === true) {
  console.log("valid");
} else {
  console.log(typeof result?.message === "string" ? result.message : JSON.stringify(result));
  process.exit(1);
}
`;

Deno.test({
  name: `the OpenRPC files of spec/ are valid for ${OPENRPC_UTILS}'s validateOpenRPCDocument`,
  ignore: missing !== undefined,
  async fn() {
    const files = specs().openrpc;
    assert.ok(files.length > 0, "spec/ has an OpenRPC file");
    const script = await Deno.makeTempFile({ suffix: ".cjs" });
    try {
      await Deno.writeTextFile(script, OPENRPC_CHECK);
      for (const file of files) {
        const doc = parse(await Deno.readTextFile(new URL(file, ROOT)));
        const { code, stdout, stderr } = await npx(
          ["-p", OPENRPC_UTILS, "-c", `node ${JSON.stringify(script)}`],
          JSON.stringify(doc),
        );
        if (code !== 0 || stdout.trim() !== "valid") console.error(`${file}:\n${stdout}${stderr}`);
        assert.equal(stdout.trim(), "valid", `${file} is a valid OpenRPC document`);
        assert.equal(code, 0);
      }
    } finally {
      await Deno.remove(script);
    }
  },
});
