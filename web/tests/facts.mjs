// The facts the tests run with: the server's own (server/facts.py, default config), kept in
// facts.json, which tests/unit/test_facts.py holds to the server. Read as the pages read theirs.
import { readFileSync } from "node:fs";

import { parseFacts } from "../static/common/facts.js";

export const FACTS = parseFacts(readFileSync(new URL("./facts.json", import.meta.url), "utf8"));
/** The broadcast's sample rate, and its samples a ms. */
export const RATE = FACTS.sample_rate;
export const MS = RATE / 1000;
