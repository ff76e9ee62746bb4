// The workerd baseline of `deno task bench --only requests`: the body the benchmark's trivial
// microservice answers, from a fetch handler (see workerd_hello.capnp).
export default {
  fetch() {
    return new Response("hello", { headers: { "content-type": "text/plain" } });
  },
};
