/**
 * `<nodeId>@mmesh/<path>` across networks: two real nodes of one account, each on a "LAN" of its
 * own (a private mDNS group each, so neither sees the other there), both joined to a real hub.
 * A microservice on A reaches B's microservice through the hub, by the runtime (its token in
 * `x-edge-authorization`, its own `Authorization` kept for B's microservice) and the reference
 * agent's way (the account listing, the service by `<clientId>-<name>`, B's `proxy` address with
 * the sep headers); B's answer streams. Without a token it is the LAN's 404; a token of another
 * account, or another account's node, is refused.
 */
import assert from "node:assert/strict";
import { deployScript } from "../testing/mcm.ts";
import { joinHub, startTestHub } from "../testing/hub.ts";
import { cliToken, makeIssuer } from "../testing/identity.ts";
import { linkLocalNodes, randomMdnsPort } from "../testing/mesh.ts";
import { withTempDir } from "../testing/node.ts";

const CLIENT = "0b6c4a2e-6f4b-4d4e-9a51-3c2f1e0d9b8a";
const MILM_KEY = "1234";

/**
 * B's microservice, as mILM streams a chat behind its API key: three server-sent events 300 ms
 * apart, each naming the node, what was asked, and what reached it of the caller's headers.
 */
const MILM_STYLE = `
mimikModule.exports = function (context, req, res) {
  if (req.headers.authorization !== 'bearer ${MILM_KEY}') {
    res.statusCode = 403;
    return res.end(JSON.stringify({ error: { code: 403, message: 'Forbidden' } }));
  }
  var asked = JSON.parse(req.body).messages[0].content;
  var seen = {
    via: req.headers['x-edge-via'] || null,
    tunnelToken: req.headers['x-edge-authorization'] || null
  };
  var parts = ['one', 'two', 'three'];
  res.setHeader('content-type', 'text/event-stream');
  var i = 0;
  function next() {
    if (i === parts.length) {
      res.write('data: [DONE]\\n\\n');
      return res.end();
    }
    res.write('data: ' + JSON.stringify({
      node: context.info.nodeId, asked: asked, seen: seen, part: parts[i++]
    }) + '\\n\\n');
    setTimeout(next, 300);
  }
  next();
};`;

/**
 * A's microservice. \`/runtime?target=<nodeId>@mmesh/<path>&token=T\`: hands the URL to
 * context.http.request, T in x-edge-authorization. \`/agent?node=<id>&path=<path>\`: resolves B
 * itself in the account listing (decrypted with EDGE_ACCESS_TOKEN), by its service
 * \`<clientId>-milm-v1\`, and calls B's \`proxy\` address with the sep headers. Both stream back;
 * a failure is \`{status, message, content}\` with status 599.
 */
const CALLER = `
function fail(res, e) {
  res.statusCode = 599;
  res.end(JSON.stringify({ status: e.status, message: e.message, content: e.content }));
}
function relay(context, res, url, headers, body) {
  headers['content-type'] = 'application/json';
  headers.authorization = 'bearer ${MILM_KEY}';
  context.http.request({
    url: url, type: 'POST', headers: headers, data: body, mode: 'stream',
    success: function (chunk) {
      if (chunk.data) res.write(chunk.data);
      if (chunk.done) res.end();
    },
    error: function (e) { fail(res, e); }
  });
}
function query(req, name) {
  var match = new RegExp('[?&]' + name + '=([^&]*)').exec(req.url);
  return match ? decodeURIComponent(match[1]) : '';
}
mimikModule.exports = function (context, req, res) {
  var path = req.url.split('?')[0];
  if (path === '/runtime') {
    var token = query(req, 'token');
    var headers = token ? { 'x-edge-authorization': 'Bearer ' + token } : {};
    return relay(context, res, query(req, 'target'), headers, req.body);
  }
  var nodeId = query(req, 'node');
  var token = context.env.EDGE_ACCESS_TOKEN;
  context.http.request({
    url: 'http://localhost:' + context.info.httpPort + '/mds/v1/nodes?clusters=account',
    success: function (r) {
      context.edge.decryptEncryptedNodesJson({
        type: 'local', data: JSON.stringify(JSON.parse(r.data).data), token: token,
        success: function (d) {
          var account = JSON.parse(d.data).account;
          context.edge.decryptEncryptedNodesJson({
            type: 'account', data: account.cipheredNodes, token: token,
            success: function (n) {
              var node = JSON.parse(n.data).filter(function (x) { return x.id === nodeId; })[0];
              if (!node) return fail(res, { status: 404, message: 'Cannot find node ' + nodeId });
              var wanted = context.info.serviceType.substring(0, 36) + '-milm-v1';
              var service = node.services.filter(function (s) { return s.serviceType === wanted; })[0];
              if (!service) return fail(res, { status: 404, message: 'Cannot find mim service on node' });
              var proxy = node.addresses.filter(function (a) { return a.type === 'proxy'; })[0];
              var local = node.addresses.filter(function (a) { return a.type === 'local'; })[0];
              relay(context, res, proxy.url.href.replace(/\\/$/, '') + '/' + query(req, 'path'), {
                'x-mimik-port': local.url.href.split(':')[2].split('/')[0],
                'x-mimik-routing': btoa(JSON.stringify({
                  nodeId: node.id, localLinkNetworkId: node.localLinkNetworkId
                })),
                'x-edge-authorization': 'Bearer ' + token
              }, req.body);
            },
            error: function (e) { fail(res, e); }
          });
        },
        error: function (e) { fail(res, e); }
      });
    },
    error: function (e) { fail(res, e); }
  });
};`;

/** The events of a streamed answer, parsed, with when each read arrived. */
async function events(response: Response) {
  const reads: { at: number; text: string }[] = [];
  const decoder = new TextDecoder();
  for await (const chunk of response.body!) {
    reads.push({ at: Date.now(), text: decoder.decode(chunk, { stream: true }) });
  }
  const text = reads.map((r) => r.text).join("");
  const parsed = text.split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
  assert.equal(parsed.pop(), "[DONE]", text);
  const first = reads.find((r) => r.text.includes('"one"'))!.at;
  const last = reads.find((r) => r.text.includes('"three"'))!.at;
  return { events: parsed.map((e) => JSON.parse(e)), spreadMs: last - first };
}

Deno.test("a microservice on A reaches B on another LAN through the hub: by the runtime and the agent's way", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const started = await startTestHub(issuer, `${dir}/hub`);
    await using hub = { ...started, [Symbol.asyncDispose]: async () => void await started.stop() };
    // Each node alone in an mDNS group of its own: two LANs. A's microservices may reach
    // loopback (the hub, in this test) for the agent's own resolution.
    const lan = () => ({ discovery: { port: randomMdnsPort(), announceSeconds: 30 } });
    const a = await joinHub(hub.url, issuer, "acct-1", {
      name: "a",
      config: { ...lan(), mcm: { outboundNetworks: ["public", "private", "loopback"] } },
    });
    await using _a = a.node;
    const b = await joinHub(hub.url, issuer, "acct-1", { name: "b", config: lan() });
    await using _b = b.node;
    const c = await joinHub(hub.url, issuer, "acct-2", { name: "c", config: lan() });
    await using _c = c.node;
    assert.ok(
      !(await linkLocalNodes(a.node)).some((n: { id: string }) => n.id === b.id),
      "A does not see B on its LAN",
    );

    await deployScript(b.node, "milm-v1", MILM_STYLE, { "MCM.BASE_API_PATH": "/milm/v1" }, CLIENT);
    const caller = await deployScript(
      a.node,
      "caller",
      CALLER,
      { EDGE_ACCESS_TOKEN: a.token },
      CLIENT,
    );
    const path = `${CLIENT}/milm/v1/chat/completions`;
    const ask = (how: string, query: Record<string, string>, content: string) =>
      fetch(`${caller.url}/${how}?${new URLSearchParams(query)}`, {
        method: "POST",
        body: JSON.stringify({ messages: [{ role: "user", content }] }),
      });
    const expected = (asked: string) =>
      ["one", "two", "three"].map((part) => ({
        node: b.id,
        asked,
        // Through the hub, and the tunnel's credential never reaches B's microservice.
        seen: { via: "hub", tunnelToken: null },
        part,
      }));

    const byRuntime = await ask("runtime", {
      target: `${b.id}@mmesh/${path}`,
      token: a.token,
    }, "by the runtime");
    if (byRuntime.status !== 200) assert.fail(`${byRuntime.status}: ${await byRuntime.text()}`);
    const runtime = await events(byRuntime);
    assert.deepEqual(runtime.events, expected("by the runtime"));
    assert.ok(runtime.spreadMs >= 300, `parts arrived ${runtime.spreadMs} ms apart: streamed`);

    const byAgent = await ask("agent", { node: b.id, path }, "the agent's way");
    if (byAgent.status !== 200) assert.fail(`${byAgent.status}: ${await byAgent.text()}`);
    assert.deepEqual((await events(byAgent)).events, expected("the agent's way"));

    // Without a token the mesh is the LAN: the reference's 404, with what to send.
    const tokenless = await ask("runtime", { target: `${b.id}@mmesh/${path}` }, "x");
    assert.equal(tokenless.status, 599);
    const refused = await tokenless.json();
    assert.equal(refused.status, 404);
    const lanOnly = JSON.parse(refused.content);
    assert.equal(lanOnly.statusCode, 404);
    assert.match(lanOnly.message, /^Cannot find node [0-9a-f]{56} in the linkLocal network/);
    assert.match(lanOnly.message, /x-edge-authorization/);

    // A token of another account is refused at A before anything is sent.
    const stranger = await cliToken(issuer, "acct-2", "edge:clusters");
    const foreign = await ask("runtime", { target: `${b.id}@mmesh/${path}`, token: stranger }, "x");
    const forbidden = await foreign.json();
    assert.equal(forbidden.status, 403, JSON.stringify(forbidden));
    assert.match(JSON.parse(forbidden.content).message, /cannot reach the account's nodes/);

    // Another account's node, connected to the same hub, is not the account's to reach.
    const other = await ask("runtime", { target: `${c.id}@mmesh/${path}`, token: a.token }, "x");
    const notOurs = await other.json();
    assert.equal(notOurs.status, 404, JSON.stringify(notOurs));
    assert.match(JSON.parse(notOurs.content).message, /nor among the account's nodes/);
  }));
