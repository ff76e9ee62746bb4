import assert from "node:assert/strict";
import { cliScript } from "./install_cli.ts";

const SCRIPT = new URL("install_cli.ts", import.meta.url);
const DENO_JSON = new URL("../deno.json", import.meta.url);

Deno.test("the command runs deno.json's edgenode task line on the checkout, quoted for sh", () => {
  const script = cliScript("/src/my checkout", "/opt/deno", "2.9.6");
  assert.match(
    script,
    /^ *exec \/opt\/deno run --node-modules-dir=none .* '\/src\/my checkout\/src\/main\.ts' "\$@"$/m,
  );
  assert.match(script, /^exec npx -y deno@2\.9\.6 run .* "\$@"$/m);
});

Deno.test("a checkout whose path has a space: the command names the path, not its URL", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const checkout = `${dir}/my checkout`;
    await Deno.mkdir(`${checkout}/scripts`, { recursive: true });
    await Deno.copyFile(SCRIPT, `${checkout}/scripts/install_cli.ts`);
    await Deno.copyFile(DENO_JSON, `${checkout}/deno.json`);
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        "--allow-read",
        "--allow-write",
        "--allow-env=HOME,PATH",
        `${checkout}/scripts/install_cli.ts`,
        "--bin-dir",
        `${dir}/bin`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const installed = await Deno.readTextFile(`${dir}/bin/edgenode`);
    assert.ok(installed.includes(`'${checkout}/src/main.ts'`), installed);
    assert.ok(!installed.includes("%20"), installed);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
