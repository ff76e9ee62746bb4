import assert from "node:assert/strict";
import { ConfigError } from "./config_error.ts";
import { HUB_FILES, NODE_FILES, resolvePaths, settingsFiles } from "./server_settings.ts";

const env = (vars: Record<string, string>) => (name: string) => vars[name];

Deno.test("resolvePaths: flag over environment over the home folder, for node and hub", () => {
  const cases: [Parameters<typeof resolvePaths>, { dataDir: string; configPath: string }][] = [
    [[{}, env({ HOME: "/home/me" }), NODE_FILES], {
      dataDir: "/home/me/.edgenode",
      configPath: "/home/me/.edgenode/config.json",
    }],
    [[{}, env({ HOME: "/home/me", EDGENODE_DATA_DIR: "/srv/n" })], {
      dataDir: "/srv/n",
      configPath: "/srv/n/config.json",
    }],
    [[{ dataDir: "/d", config: "/etc/e.json" }, env({ EDGENODE_DATA_DIR: "/srv/n" })], {
      dataDir: "/d",
      configPath: "/etc/e.json",
    }],
    [[{}, env({ USERPROFILE: "/u", EDGENODE_DATA_DIR: "/n" }), HUB_FILES], {
      dataDir: "/u/.edgenode-hub",
      configPath: "/u/.edgenode-hub/hub.json",
    }],
  ];
  for (const [given, want] of cases) assert.deepEqual(resolvePaths(...given), want);
  assert.throws(() => resolvePaths({}, env({}), HUB_FILES), ConfigError);
});

Deno.test("settingsFiles: the data directory, config, trust files and JWKS files", () => {
  assert.deepEqual(
    settingsFiles({
      dataDir: "/d",
      configPath: "/d/c.json",
      trustFiles: ["/t.json"],
      trustedIssuers: [
        { issuer: "a", jwksFile: "/a.jwks" },
        { issuer: "b", jwksUrl: "https://b.example/jwks" },
      ],
    }),
    ["/d", "/d/c.json", "/t.json", "/a.jwks"],
  );
});
