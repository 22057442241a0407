// The host API as the desk calls it: the requests it builds, and every answer as {status, data}.
import assert from "node:assert/strict";
import { test } from "node:test";

import { apiRequest, callApi, explain } from "../static/host/api.js";

test("a call carries the host token; a body goes as JSON; nothing is cached", () => {
  const [path, init] = apiRequest("POST", "/api/v1/say", { text: "Hi", mode: "verbatim" }, "tok");
  assert.equal(path, "/api/v1/say");
  assert.deepEqual(init, {
    method: "POST",
    headers: { Authorization: "Bearer tok", "Content-Type": "application/json" },
    body: '{"text":"Hi","mode":"verbatim"}',
    cache: "no-store",
  });
  const [, get] = apiRequest("GET", "/api/v1/show", undefined, "tok");
  assert.deepEqual(get.headers, { Authorization: "Bearer tok" });
  assert.equal(get.body, undefined);
});

/** A fetch that answers with `status` and `body` (a string: not JSON unless it parses). */
function answering(status, body, statusText = "") {
  const calls = [];
  const fetchFn = async (path, init) => {
    calls.push({ path, init });
    return { status, statusText, ok: status >= 200 && status < 300, json: async () => JSON.parse(body) };
  };
  return { fetchFn, calls };
}

test("an answer is its status and its JSON", async () => {
  const { fetchFn, calls } = answering(202, '{"utterance_id": "u1"}');
  const got = await callApi("POST", "/api/v1/say", { text: "x" }, "tok", fetchFn);
  assert.deepEqual(got, { status: 202, data: { utterance_id: "u1" } });
  assert.equal(calls[0].init.headers.Authorization, "Bearer tok");
});

test("no answer is status 0; an answer that is not JSON is an error whatever its status", async () => {
  const down = async () => {
    throw new TypeError("Failed to fetch");
  };
  assert.deepEqual(await callApi("GET", "/api/v1/show", undefined, "t", down), {
    status: 0,
    data: { error: "the server cannot be reached" },
  });
  const proxy = answering(502, "<h1>Bad Gateway</h1>", "Bad Gateway").fetchFn;
  assert.deepEqual(await callApi("GET", "/api/v1/show", undefined, "t", proxy), {
    status: 502,
    data: { error: "502 Bad Gateway: the answer was not JSON" },
  });
  const cut = answering(200, '{"queue": [', "OK").fetchFn;
  const got = await callApi("GET", "/api/v1/show", undefined, "t", cut);
  assert.equal(got.status, 502, "a 200 whose body is cut short is no state to show");
  assert.match(got.data.error, /^200 OK: the answer was not JSON/);
});

test("errors are told in words for the host", () => {
  assert.equal(explain(429, { error: "queue full" }), "Queue full — queue full. Wait for a line to finish.");
  assert.equal(explain(413, { error: '"text" longer than 2000 characters' }), 'Too long — "text" longer than 2000 characters.');
  assert.equal(explain(401, {}), "Wrong host token — sign in again.");
  assert.equal(explain(503, null), "The show is still loading its models.");
  assert.equal(explain(400, { error: "unknown role" }), "Unknown role");
  assert.equal(explain(500, {}), "Error 500");
});
