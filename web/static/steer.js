// Steering a running turn from the console (issue 32): besides queueing a
// message behind the turn, a person can put it into the turn itself
// (POST /session/{id}/steer {message}; gateway/steer.go). The server
// answers 409 when no turn runs and 422 naming the engines that can when
// the session's engine cannot; the console shows that message as is. The
// steered message comes back in the turn's log as a user:message, shown
// by the transcript where it came.

/** Whether the session's engine steers, from GET /engines' controls. An
 * engine the console does not know (engines not loaded yet) is not
 * offered: Queue still works for it. */
export function canSteer(engines, engine) {
  const e = Array.isArray(engines) ? engines.find((x) => x && x.name === engine) : null;
  return !!e?.controls?.steer;
}

/** Steers text into session id's running turn. Resolves {ok: true}, or
 * {ok: false, status, message} with the server's own words. */
export async function steer(api, id, text) {
  try {
    await api.json("POST", `session/${encodeURIComponent(id)}/steer`, { message: text });
    return { ok: true };
  } catch (e) {
    if (e?.name === "AbortError") throw e;
    return { ok: false, status: e?.status ?? 0, message: String(e?.message || e) };
  }
}
