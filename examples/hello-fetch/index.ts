// An edgenode microservice in the modern model: a default export with fetch(request, env,
// context). `edgenode image build` bundles it into a classic script.
interface Context {
  storage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
  info: { nodeId: string; apiRoot: string };
}

export default {
  async fetch(request: Request, env: Record<string, string>, context: Context): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/hello") {
      return Response.json({
        message: `Hello ${url.searchParams.get("name") ?? "world"}`,
        greeting: env.GREETING,
      });
    }
    if (url.pathname === "/visits" && request.method === "POST") {
      const visits = Number(context.storage.getItem("visits") ?? "0") + 1;
      context.storage.setItem("visits", String(visits));
      return Response.json({ visits });
    }
    if (url.pathname === "/echo" && request.method === "POST") {
      return new Response(await request.text(), { headers: { "content-type": "text/plain" } });
    }
    return Response.json({ error: "not found", path: url.pathname }, { status: 404 });
  },
};
