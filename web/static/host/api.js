// The host API as the desk calls it: requests with the host token, answers as {status, data}
// whatever happens on the way, and errors in words for the host. No DOM.

/** The fetch arguments of a call: `body` sent as JSON when given, nothing cached. */
export function apiRequest(method, path, body, token) {
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const init = {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  };
  return [path, init];
}

/**
 * One call: {status, data}. No answer at all is status 0; an answer that is not JSON (a proxy's
 * error page, a body cut short) is an error, whatever its status said.
 */
export async function callApi(method, path, body, token, fetchFn = (...a) => fetch(...a)) {
  let res;
  try {
    res = await fetchFn(...apiRequest(method, path, body, token));
  } catch {
    return { status: 0, data: { error: "the server cannot be reached" } };
  }
  try {
    return { status: res.status, data: await res.json() };
  } catch {
    const error = `${res.status} ${res.statusText}: the answer was not JSON`;
    return { status: res.ok ? 502 : res.status, data: { error } };
  }
}

/** An error answer in words for the host. */
export function explain(status, data) {
  const msg = data && data.error ? data.error : `error ${status}`;
  if (status === 429) return `Queue full — ${msg}. Wait for a line to finish.`;
  if (status === 413) return `Too long — ${msg}.`;
  if (status === 401) return "Wrong host token — sign in again.";
  if (status === 503) return "The show is still loading its models.";
  return msg.charAt(0).toUpperCase() + msg.slice(1);
}
