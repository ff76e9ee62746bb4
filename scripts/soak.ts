/**
 * `deno task soak`: the long runs of the reliability suite, with their figures.
 * - load: 50 uploaders, 200 readers, 20 download clients, 20 JSON-RPC callers for
 *   EDGENODE_LOAD_SECONDS (default 120), with no failed request and flat memory;
 * - crash: EDGENODE_CRASH_ROUNDS SIGKILLs (default 300, within EDGENODE_CRASH_SECONDS, 900);
 * - fuzz: EDGENODE_FUZZ_RUNS generated cases per property (default 1000);
 * - abuse: two hostile clients run every attack on a node for EDGENODE_ABUSE_SECONDS (default
 *   120) while a bystander's microservice and the key holder's chats keep p99 within 3× of idle.
 * `--abuse` runs the abuse part alone.
 * Each part's figures are printed at the end, for docs/benchmarks.md and docs/security.md.
 *
 * @module
 */
const PARTS = [
  { file: "tests/load_test.ts", env: { EDGENODE_LOAD_SECONDS: "120" }, figure: /^load: .*/m },
  {
    file: "tests/crash_test.ts",
    env: { EDGENODE_CRASH_ROUNDS: "300", EDGENODE_CRASH_SECONDS: "900" },
    figure: /^crash: .*/m,
  },
  { file: "tests/fuzz_http_test.ts", env: { EDGENODE_FUZZ_RUNS: "1000" }, figure: /^fuzz: \d.*/m },
  {
    file: "tests/abuse_soak_test.ts",
    env: { EDGENODE_ABUSE_SECONDS: "120" },
    figure: /^abuse: \d.*(\n {2}.*)*/m,
  },
];
const chosen = Deno.args.includes("--abuse")
  ? PARTS.filter((part) => part.file.includes("abuse"))
  : PARTS;

const figures: string[] = [];
let failed = false;
for (const part of chosen) {
  const env = Object.fromEntries(
    Object.entries(part.env).map(([name, value]) => [name, Deno.env.get(name) ?? value]),
  );
  console.log(`== ${part.file} ${JSON.stringify(env)}`);
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--no-prompt",
      "--allow-run",
      "--allow-net=127.0.0.1,0.0.0.0,224.0.0.251",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-sys=homedir,osRelease",
      part.file,
    ],
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  console.log(text);
  if (!output.success) failed = true;
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  figures.push(`${part.figure.exec(text)?.[0] ?? `${part.file}: no figure`} (${minutes} min)`);
}
console.log(`\nsoak, ${new Date().toISOString().slice(0, 10)}:\n${figures.join("\n")}`);
Deno.exit(failed ? 1 : 0);
