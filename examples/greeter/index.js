// The smallest microservice in the reference's programming model, the one the README deploys:
// GET /sayHello/NAME answers {"message":"<GREETING> NAME!"}, GREETING from the container's env
// (`edgenode deploy examples/greeter --env GREETING=Hi`), "Hello" when it is not set.
mimikModule.exports = (context, req, res) => {
  console.log(`${req.method} ${req.url}`); // edgenode containers logs NAME shows it
  const name = /^\/sayHello\/([^/?]+)/.exec(req.url)?.[1];
  res.setHeader("content-type", "application/json");
  if (req.method !== "GET" || name === undefined) {
    res.statusCode = 404;
    res.end(JSON.stringify({ code: 404, message: "try GET /sayHello/NAME" }));
    return;
  }
  const greeting = context.env.GREETING ?? "Hello";
  res.end(
    JSON.stringify({ message: `${greeting} ${decodeURIComponent(name)}!` }),
  );
};
