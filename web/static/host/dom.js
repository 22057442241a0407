// Small DOM helpers of the host desk. Text from the server or a viewer goes in with
// textContent, never as HTML.

/** The element of the page with this id. */
export const $ = (id) => document.getElementById(id);

/** An element: `props` set as class, text, dataset, on<event> listeners or attributes. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c) node.append(c);
  return node;
}

/** Set a node's text, touching it only when it changes. */
export function setText(node, text) {
  const t = text ?? "";
  if (node.textContent !== t) node.textContent = t;
}

// Update a list in place, keyed by id, so buttons under the pointer are not rebuilt each second.
export function syncList(list, items, make, update, emptyNode) {
  const existing = new Map([...list.children].map((li) => [li.dataset.key, li]));
  let prev = null;
  for (const item of items) {
    let li = existing.get(item.id);
    if (li) existing.delete(item.id);
    else {
      li = make(item);
      li.dataset.key = item.id;
    }
    update(li, item);
    const want = prev ? prev.nextSibling : list.firstChild;
    if (want !== li) list.insertBefore(li, want);
    prev = li;
  }
  for (const li of existing.values()) li.remove();
  if (emptyNode) emptyNode.hidden = items.length > 0;
}

/** A grid of [label, value, class] figures, its cells kept across refreshes. */
export function fillStats(box, figs) {
  if (box.children.length !== figs.length) {
    box.replaceChildren(
      ...figs.map(() => el("div", { class: "stat" }, el("span", { class: "k" }), el("span", { class: "v" }))),
    );
  }
  figs.forEach(([k, val, cls], i) => {
    const cell = box.children[i];
    cell.className = `stat ${cls || ""}`.trim();
    setText(cell.children[0], k);
    setText(cell.children[1], val);
  });
}
