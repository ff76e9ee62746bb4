/**
 * A microservice written the way the reference vendor's helper libraries and published
 * microservices write theirs (tests/mcm_reference_test.ts): an ES5 classic script that sets the
 * global `mimikModule.exports`, probes its platform as the `debug` package and webpack's shims
 * do, patches the context the way @mimik/edge-ms-helper's edge polyfill does on every request,
 * fetches its node's listing from `http://localhost:<httpPort>/mds/v1/nodes` without
 * credentials, and ends with the language-model microservice's replacement of `setTimeout`.
 * Written for these tests; no vendor code.
 *
 * @module
 */

/** The bundle (index.js). */
export const REFERENCE_MIM = String.raw`
// What the debug package does while loading: must not throw where there is no process.
var debugEnv = (typeof process !== 'undefined' && process.env) ? process.env.DEBUG : undefined;
// webpack 4's global detection.
var g = (function () { return this; })() || Function('return this')();

function query(url) {
  var out = {};
  var q = url.indexOf('?') < 0 ? '' : url.slice(url.indexOf('?') + 1);
  q.split('&').forEach(function (pair) {
    if (!pair) return;
    var i = pair.indexOf('=');
    var k = decodeURIComponent(i < 0 ? pair : pair.slice(0, i));
    out[k] = i < 0 ? '' : decodeURIComponent(pair.slice(i + 1).replace(/\+/g, ' '));
  });
  return out;
}

function send(res, status, body) {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}

function bearer(req) {
  return String(req.authorization || '').replace(/^Bearer\s+/i, '');
}

function nodesUrl(context, search) {
  return 'http://localhost:' + context.info.httpPort + '/mds/v1/nodes?' + search;
}

// Like edge-ms-helper's edge-pollyfill: assigned onto context.edge at every request.
function polyfill(context) {
  Object.assign(context.edge, {
    clusterDiscovery: function (options) {
      context.http.request({
        url: nodesUrl(context, 'clusters=' + options.type),
        success: function (r) {
          var encrypted = JSON.stringify(JSON.parse(r.data).data);
          context.edge.decryptEncryptedNodesJson({
            type: 'local',
            data: encrypted,
            token: options.token,
            success: function (d) { options.success(JSON.parse(d.data)); },
            error: options.error
          });
        },
        error: options.error
      });
    },
    systemInfo: function () {
      return { nodeId: context.info.nodeId, httpPort: context.info.httpPort };
    }
  });
}

var routes = {
  '/probe': function (context, req, res) {
    var enc = new TextEncoder().encode('\u00e9t\u00e9');
    send(res, 200, {
      types: {
        process: typeof process, Deno: typeof Deno, Buffer: typeof Buffer, window: typeof window,
        global: typeof global, navigator: typeof navigator, self: typeof self, caches: typeof caches,
        localStorage: typeof localStorage, Worker: typeof Worker, WebSocket: typeof WebSocket
      },
      debugEnv: typeof debugEnv,
      globalIsGlobalThis: g === globalThis,
      gSetImmediate: typeof g.setImmediate,
      setImmediate: typeof setImmediate,
      clearImmediate: typeof clearImmediate,
      base64: Duktape.enc('base64', 'hi'),
      encodedLength: enc.length,
      decoded: new TextDecoder().decode(enc),
      consoleLog: typeof console.log,
      ml: typeof context.ml
    });
  },
  '/ml': function (context, req, res) {
    if (!context.ml || typeof context.ml.chatCompletions !== 'function') {
      return send(res, 501, { code: 501, message: 'require edgeEngine with ml capability enabled' });
    }
    context.ml.chatCompletions({
      model: 'no-such-model',
      messages: [{ role: 'user', content: 'hi' }],
      success: function () { send(res, 200, {}); },
      error: function (e) { send(res, e.status, { code: e.status, message: e.message }); }
    });
  },
  '/late': function (context, req, res) {
    var cleared = setImmediate(function () { res.end('cleared timer ran'); });
    clearImmediate(cleared);
    setTimeout(function () {
      setImmediate(function () { res.end('late'); });
    }, 0);
  },
  '/polyfill': function (context, req, res) {
    send(res, 200, {
      info: context.edge.systemInfo(),
      decrypt: typeof context.edge.decryptEncryptedNodesJson,
      clusterDiscovery: typeof context.edge.clusterDiscovery
    });
  },
  '/nodes': function (context, req, res) {
    context.edge.clusterDiscovery({
      type: 'linkLocal',
      token: bearer(req),
      success: function (listing) { send(res, 200, listing); },
      error: function (e) { send(res, 403, { message: e.message, status: e.status }); }
    });
  },
  '/ping': function (context, req, res) {
    context.http.request({
      url: nodesUrl(context, 'ping=true'),
      success: function (r) { send(res, 200, { id: JSON.parse(r.data).data.id }); },
      error: function (e) { send(res, 502, { message: e.message, status: e.status }); }
    });
  },
  '/node-api': function (context, req, res) {
    var q = query(req.url);
    context.http.request({
      url: 'http://localhost:' + context.info.httpPort + q.path,
      type: q.type || 'GET',
      data: q.type === 'POST' ? { jsonrpc: '2.0', id: 1, method: 'getEdgeIdToken' } : undefined,
      success: function (r) { send(res, 200, { leaked: r.data }); },
      error: function (e) { send(res, 200, { status: e.status, message: e.message }); }
    });
  },
  '/bep': function (context, req, res) {
    context.edge.requestBep({
      code: 'x',
      success: function (r) { send(res, 200, { bep: r.data }); },
      error: function (e) { send(res, 200, { status: e.status, message: e.message }); }
    });
  },
  '/fetch': function (context, req, res) {
    var q = query(req.url);
    var calls = [];
    var started = Date.now();
    var options = {
      url: q.url,
      success: function (r) {
        calls.push({ done: r.done, length: r.data.length, status: r.status });
        if (q.mode === 'stream' && !r.done) return;
        var total = 0;
        calls.forEach(function (c) { total += c.length; });
        send(res, 200, { calls: calls, total: total, data: r.data.slice(0, 40), ms: Date.now() - started });
      },
      error: function (e) {
        send(res, 200, {
          calls: calls,
          error: { message: e.message, status: e.status, content: e.content, headers: typeof e.headers },
          ms: Date.now() - started
        });
      }
    };
    if (q.mode) options.mode = q.mode;
    if (q.outputFile) options.outputFile = q.outputFile;
    if (q.socketTimeout) options.socketTimeout = Number(q.socketTimeout);
    if (q.connectionTimeout) options.connectionTimeout = Number(q.connectionTimeout);
    context.http.request(options);
  },
  '/file': function (context, req, res) {
    res.writeMimeFile(query(req.url).name, 'application/octet-stream');
  },
  '/save': function (context, req, res) {
    try {
      context.storage.saveFile(query(req.url).name, req.body);
      send(res, 201, { saved: true });
    } catch (e) {
      send(res, 400, { message: e.message });
    }
  },
  '/form': function (context, req, res) {
    // mModelShare's upload: the file part goes to storage under an id, the fields are read.
    var fields = {};
    var stored = [];
    try {
      req.handleFormRequest({
        found: function (key, filename) {
          return filename ? { action: 'store', path: 'upload-' + key } : { action: 'get' };
        },
        get: function (key, value) { fields[key] = value; },
        store: function (path, size) { stored.push({ path: path, size: size }); }
      });
    } catch (e) {
      return send(res, 400, { message: e.message });
    }
    send(res, 201, { fields: fields, stored: stored });
  },
  '/delete': function (context, req, res) {
    try {
      context.storage.deleteFile(query(req.url).name);
      send(res, 200, { deleted: true });
    } catch (e) {
      send(res, 400, { message: e.message });
    }
  }
};

mimikModule.exports = function (context, req, res) {
  polyfill(context);
  var route = routes[req.url.split('?')[0]];
  if (!route) return send(res, 404, { code: 404, message: 'Not Found' });
  route(context, req, res);
};

// The language-model microservice's last line: setTimeout becomes a wrapper of setImmediate.
globalThis.setTimeout = function (f) { return setImmediate(f); };
`;
