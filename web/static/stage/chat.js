// The viewers' chat column. Viewer text is only ever set as textContent, never parsed as HTML.

const SHOWN = 100;

export class ChatColumn {
  constructor({ log, form, input, error }, send) {
    Object.assign(this, { log, form, input, error, send });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.#submit();
    });
  }

  show(msg) {
    if (!msg || typeof msg.text !== "string") return;
    const item = document.createElement("li");
    item.dataset.id = String(msg.id ?? "");
    const who = document.createElement("span");
    who.className = "from";
    who.textContent = String(msg.from ?? "viewer");
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = msg.text;
    item.append(who, text);
    this.log.append(item);
    while (this.log.children.length > SHOWN) this.log.firstElementChild.remove();
    this.log.scrollTop = this.log.scrollHeight;
  }

  async #submit() {
    const text = this.input.value.trim();
    if (!text) return;
    this.error.textContent = "";
    try {
      const ack = await this.send(text);
      if (ack?.ok) this.input.value = "";
      else this.error.textContent = ack?.error ?? "message not sent";
    } catch (err) {
      this.error.textContent = "not connected: message not sent";
    }
  }
}
