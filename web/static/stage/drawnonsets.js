// Lip-sync as drawn: the picture of each viseme onset against the sound heard then, and each
// utterance's first voiced frame seen, for the page's reports to the server.

import { requireRate } from "./rate.js";
import { RecentSet } from "./recentset.js";

/**
 * Lip-sync as the viewer sees it, at every viseme onset: the first frame that shows a viseme
 * (its planned start reached at the frame's drawn sample) is late by the drawn sample minus
 * that start; the caller's correction is added (the heard clock's own remaining error, as
 * measured at speech onsets, and that the frame appears before the moment it was drawn for).
 * Positive: the picture is late. Collected between reports, at most `max` of them, each with
 * whether its frame came held back (FrameStats.held): the viewer's machine's stall, which a
 * meter of the page's timing counts apart.
 *
 * The first voiced frame drawn of each utterance also gives the server that utterance's
 * picture and heard times on its clock (`utterance_onsets`): the picture when the frame was
 * seen, the sound of the line's first voiced viseme (from `track`, drawn or not) when it was
 * heard. At most `maxUtterances` between reports.
 */
export class DrawnOnsets {
  constructor({ sampleRate, track = null, max = 200, maxUtterances = 50 } = {}) {
    this.perMs = requireRate(sampleRate) / 1000;
    this.track = track; // the VisemeTrack the frames come from: where each line starts
    this.max = max;
    this.maxUtterances = maxUtterances;
    this.shown = null; // the frame last counted
    this.drawingSince = null; // the sample of the first frame drawn since the last gap
    this.pending = [];
    this.roles = []; // whose mouth each pending offset is: the role of the viseme drawn
    this.held = []; // whether each pending offset's frame came held back
    this.utterances = []; // {id, sample, heard_ms, drawn_ms}
    this.drawnUtterances = new RecentSet(256); // ids whose first voiced frame has been drawn
  }

  /**
   * After drawing at sample `s` the timeline frame `f` (VisemeTrack.frameAt(s), or null).
   * `correctionMs` is added to each offset: the heard clock's remaining error as measured at
   * speech onsets (ms by which the sound runs ahead of it), less how far ahead of its
   * appearance the frame was drawn. `serverMs`: the server's clock when the frame appears
   * (null while the page's offset to it is unknown). `held`: the frame came held back.
   */
  frame(f, s, correctionMs = 0, serverMs = null, held = false) {
    this.drawingSince ??= s;
    if (!f || f === this.shown || f.viseme === "sil") return;
    this.shown = f;
    if (this.pending.length < this.max) {
      this.pending.push((s - f.start) / this.perMs + correctionMs);
      this.roles.push(typeof f.role === "string" ? f.role : null);
      this.held.push(Boolean(held));
    }
    this.#firstOfUtterance(f, s, correctionMs, serverMs);
  }

  /** A frame drew nothing of the stream (no heard clock yet, or the link down). */
  gap() {
    this.drawingSince = null;
  }

  // Only an utterance's first voiced frame drawn counts, timed or not: a later one would say
  // when the page saw the middle of the line, not its start. It is timed from the line's first
  // voiced viseme: a slow page whose frames skip a short first viseme is late by it, as the
  // viewer sees. A page that has not drawn the stream since before the line began (it joined
  // or came back in the middle of it) did not see it start, and does not time it.
  #firstOfUtterance(f, s, correctionMs, serverMs) {
    const id = f.utterance_id;
    if (id == null || this.drawnUtterances.has(id)) return;
    this.drawnUtterances.add(id);
    if (!Number.isFinite(serverMs) || this.utterances.length >= this.maxUtterances) return;
    const start = this.track?.lineStart(f) ?? f.start;
    if (this.drawingSince >= start) return; // set by this frame at the latest
    const offset = (s - start) / this.perMs + correctionMs;
    this.utterances.push({ id, sample: start, heard_ms: serverMs - offset, drawn_ms: serverMs });
  }

  /** The offsets (ms) since the last call. */
  take() {
    const out = this.pending;
    this.pending = [];
    this.roles = [];
    this.held = [];
    return out;
  }

  /**
   * A report's figures: the offsets since the last, each one's role and whether its frame came
   * held back, and the utterances' first frames.
   */
  report() {
    const { roles, held } = this;
    return {
      lipsync_onsets_ms: this.take(),
      lipsync_onset_roles: roles,
      lipsync_onsets_held: held,
      utterance_onsets: this.takeUtterances(),
    };
  }

  /** The utterances' first voiced frames drawn since the last call. */
  takeUtterances() {
    const out = this.utterances;
    this.utterances = [];
    return out;
  }
}
