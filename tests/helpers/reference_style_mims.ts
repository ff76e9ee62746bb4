/**
 * Microservices written the way the reference's AI microservices are (no vendor code), shared
 * by the tests that run them: a mILM-style model server (`MILM_STYLE`), a stand-in that streams
 * a scripted answer where mILM streams a chat (`SCRIPTED_MILM`) and an agent written the way
 * mai-v1 is (`AGENT_STYLE`), all ES5 classic scripts setting `mimikModule.exports`.
 * /work/shared/notes/real-behaviour.md (§2, §8, §9) and the reference's developer guide
 * (03-multi-agent-architecture/coordinator-machine/setup.http) describe what they imitate.
 *
 * @module
 */

/**
 * What both write alike: edge-ms-helper's error body `{message, statusCode}`, and mILM's key
 * check (the bearer of `authorization` equal to `env.API_KEY`, else 403 "Forbidden").
 */
const SHARED = String.raw`
function send(res, status, body) {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}
function fail(res, status, message, content) {
  send(res, status, { message: message, statusCode: status, content: content });
}
function authorized(context, req) {
  var given = String(req.headers.authorization || '').replace(/^bearer\s+/i, '');
  return typeof context.env.API_KEY === 'string' && given === context.env.API_KEY;
}
function json(text) {
  try { return JSON.parse(text || '{}'); } catch (e) { return {}; }
}
`;

/**
 * mILM's pattern (1.9.1): `POST /models {id, url}` writes the record `readyToUse: false`,
 * downloads to `cache/<id>.gguf` (`outputFile`, `mode: "stream"`) and marks it ready (201);
 * `GET /models` lists the records (public); `DELETE /models?modelId=<id>` deletes the file
 * and the record; `POST /chat/completions` hands the body to `context.ml.chatCompletions` with
 * `model: "cache/<id>.gguf"` and relays its answer (streamed as it comes). Every call but the
 * listing needs `Authorization: Bearer <env.API_KEY>`. A chat on a model that is not there is
 * left to `context.ml` to refuse (its status and message, as `{message, statusCode}`).
 */
export const MILM_STYLE = SHARED + String.raw`
function modelFile(id) { return 'cache/' + id + '.gguf'; }
function models(context) {
  var list = [];
  context.storage.eachItemByTag('model', function (key, value) { list.push(JSON.parse(value)); });
  return list;
}
function download(context, res, body) {
  var model = { id: body.id, object: 'model', readyToUse: false };
  context.storage.setItemWithTag(body.id, JSON.stringify(model), 'model');
  context.http.request({
    url: body.url,
    outputFile: modelFile(body.id),
    mode: 'stream',
    success: function (r) {
      if (!r.done) return;
      model.readyToUse = true;
      context.storage.setItemWithTag(body.id, JSON.stringify(model), 'model');
      send(res, 201, model);
    },
    error: function (e) { fail(res, 500, e.message); }
  });
}
function chat(context, res, body) {
  body.model = modelFile(body.model);
  body.success = function (e) {
    res.setHeader('content-type', e.headers['content-type']);
    if (!body.stream) return res.end(e.data);
    res.write(e.data);
    if (e.done) res.end();
  };
  body.error = function (e) { fail(res, e.status, e.message); };
  context.ml.chatCompletions(body);
}
mimikModule.exports = function (context, req, res) {
  var path = req.url.split('?')[0];
  var id = req.url.indexOf('modelId=') < 0 ? '' : req.url.split('modelId=')[1];
  if (req.method === 'GET' && path === '/models') return send(res, 200, { data: models(context) });
  if (!authorized(context, req)) return fail(res, 403, 'Forbidden');
  if (req.method === 'POST' && path === '/models') return download(context, res, json(req.body));
  if (req.method === 'DELETE' && path === '/models') {
    context.storage.deleteFile(modelFile(id));
    context.storage.removeItem(id);
    return send(res, 200, { id: id, object: 'model', deleted: true });
  }
  if (req.method === 'POST' && path === '/chat/completions') return chat(context, res, json(req.body));
  fail(res, 404, 'not found');
};`;

/**
 * An agent written the way mai-v1 (1.8.1) is. `POST /models` declares an agent collection as
 * the reference's guide does: `{id, modelfile: {prompts: [{url, model, apikey, required,
 * clientId?}]}}`, kept in its storage (in the reference each request is a fresh isolate). `POST
 * /chat/completions {model: <collection>, messages}` sends the messages to each prompt in turn,
 * `model` replaced by the prompt's and `Authorization: <apikey>`, and relays the answers'
 * server-sent events as they come, one `data: [DONE]` at the end.
 *
 * A prompt URL `<nodeId>@mmesh/<path>` is resolved as mai-v1 does: its linkLocal listing
 * through `context.http.request`, decrypted with `env.EDGE_ACCESS_TOKEN`, the node by `id`, a
 * service of type `<clientId>-milm-v1` (the prompt's `clientId`, else the first 36 characters
 * of its own service type), the node's `type: "local"` address, then `<url.href>/<path>`; the
 * peer's `os` characteristic is answered as `x-peer-os`. With `env.MMESH_RESOLVE = "runtime"`
 * the URL goes to `context.http.request` as it is (the node resolves it). A failure before the
 * first event is answered with its status as `{message, statusCode, content}`; a failure of a
 * prompt with `required: false` skips it.
 */
export const AGENT_STYLE = SHARED + String.raw`
function findBy(list, test) {
  for (var i = 0; i < list.length; i++) if (test(list[i])) return list[i];
  return null;
}
function resolveByListing(context, prompt, mesh, done) {
  var clientId = prompt.clientId || context.info.serviceType.substring(0, 36);
  context.http.request({
    url: 'http://localhost:' + context.info.httpPort + '/mds/v1/nodes?clusters=linkLocal',
    success: function (r) {
      context.edge.decryptEncryptedNodesJson({
        type: 'local',
        data: JSON.stringify(JSON.parse(r.data).data),
        token: context.env.EDGE_ACCESS_TOKEN,
        success: function (d) {
          var nodes = JSON.parse(d.data).localLinkNetwork.nodes;
          var node = findBy(nodes, function (n) { return n.id === mesh.nodeId; });
          if (!node) return done({ status: 404, message: 'Cannot find node ' + mesh.nodeId });
          var service = findBy(node.services, function (s) {
            return s.serviceType === clientId + '-milm-v1';
          });
          if (!service) return done({ status: 404, message: 'Cannot find mim service on node' });
          var local = findBy(node.addresses, function (a) { return a.type === 'local'; });
          var os = findBy(node.characteristics, function (c) { return c.name === 'os'; });
          done(null, local.url.href + '/' + mesh.path, os && os.value);
        },
        error: function (e) { done({ status: 403, message: e.message }); }
      });
    },
    error: function (e) { done(e); }
  });
}
function resolve(context, prompt, done) {
  var at = prompt.url.indexOf('@mmesh/');
  if (at < 0 || context.env.MMESH_RESOLVE === 'runtime') return done(null, prompt.url);
  var mesh = { nodeId: prompt.url.slice(0, at), path: prompt.url.slice(at + '@mmesh/'.length) };
  resolveByListing(context, prompt, mesh, done);
}
function ask(context, res, prompt, body, state, done) {
  var pending = '';
  body.model = prompt.model;
  resolve(context, prompt, function (error, url, os) {
    if (error) return done(error);
    if (os && !state.started) res.setHeader('x-peer-os', String(os));
    context.http.request({
      url: url,
      type: 'POST',
      headers: { 'content-type': 'application/json', authorization: prompt.apikey },
      data: JSON.stringify(body),
      mode: 'stream',
      success: function (chunk) {
        pending += chunk.data;
        var events = pending.split('\n\n');
        pending = events.pop();
        for (var i = 0; i < events.length; i++) {
          if (events[i] === 'data: [DONE]') continue;
          if (!state.started) res.setHeader('content-type', 'text/event-stream');
          state.started = true;
          res.write(events[i] + '\n\n');
        }
        if (chunk.done) done(null);
      },
      error: function (e) {
        done({ status: e.status, message: 'prompt ' + prompt.url + ': ' + e.message, content: e.content });
      }
    });
  });
}
function chat(context, req, res) {
  var body = json(req.body);
  var stored = context.storage.getItem('collection:' + body.model);
  if (!stored) return fail(res, 404, 'no agent collection ' + body.model);
  var prompts = JSON.parse(stored).modelfile.prompts;
  var state = { started: false };
  var i = 0;
  function next(error) {
    if (error && prompts[i - 1].required !== false) {
      if (!state.started) return fail(res, error.status || 502, error.message, error.content);
      res.write('data: ' + JSON.stringify({ error: { code: error.status, message: error.message } }) + '\n\n');
      return res.end();
    }
    if (i === prompts.length) {
      if (!state.started) res.setHeader('content-type', 'text/event-stream');
      res.write('data: [DONE]\n\n');
      return res.end();
    }
    ask(context, res, prompts[i++], JSON.parse(JSON.stringify(body)), state, next);
  }
  next(null);
}
mimikModule.exports = function (context, req, res) {
  var path = req.url.split('?')[0];
  if (!authorized(context, req)) return fail(res, 403, 'Forbidden');
  if (req.method === 'POST' && path === '/models') {
    var collection = json(req.body);
    context.storage.setItem('collection:' + collection.id, JSON.stringify(collection));
    return send(res, 201, collection);
  }
  if (req.method === 'POST' && path === '/chat/completions') return chat(context, req, res);
  fail(res, 404, 'not found');
};`;

/**
 * A stand-in for mILM's streamed chat, no model: `POST /chat/completions` answers three
 * server-sent events 300 ms apart, each naming the node, what was asked (the first message's
 * content) and the caller's `x-trace` header (null without; `leaked <value>` when an
 * `x-edge-authorization` reached it), then `data: [DONE]`.
 */
export const SCRIPTED_MILM = `
mimikModule.exports = function (context, req, res) {
  var path = req.url.split('?')[0];
  if (req.method !== 'POST' || path !== '/chat/completions') {
    res.statusCode = 404;
    return res.end(JSON.stringify({ message: 'no ' + req.method + ' ' + path }));
  }
  var asked = JSON.parse(req.body).messages[0].content;
  var trace = req.headers['x-trace'] || null;
  // The hub's credential is never the callee's: seeing it is a leak, and the answer says so.
  if (req.headers['x-edge-authorization']) trace = 'leaked ' + req.headers['x-edge-authorization'];
  var parts = ['one', 'two', 'three'];
  res.setHeader('content-type', 'text/event-stream');
  var i = 0;
  function next() {
    if (i === parts.length) {
      res.write('data: [DONE]\\n\\n');
      return res.end();
    }
    res.write('data: ' + JSON.stringify({
      node: context.info.nodeId, asked: asked, trace: trace, part: parts[i++]
    }) + '\\n\\n');
    setTimeout(next, 300);
  }
  next();
};`;
