// The tool-call arguments a model streams are JSON text that may arrive cut
// off or malformed. JSON.parse only says "Unexpected end of JSON input"; to
// tell the model exactly what to resend we need the members that did arrive
// complete and where the text stopped. This is the same hand-written walk
// as client/controller/args.go, so both controllers produce the same tool
// results; positions count Unicode code points in both.

export type ArgsStatus = "ok" | "empty" | "truncated" | "malformed";

export interface ArgValue {
  kind: "string" | "number" | "boolean" | "null" | "object" | "array";
  /** The decoded text of a string. */
  str: string;
  /** The raw text of an object or array (skipped loosely: it may still not be valid JSON). */
  raw?: string;
}

export interface ArgsScan {
  status: ArgsStatus;
  /** malformed: 0-based index of the unexpected character; truncated: characters received. */
  pos: number;
  /** The unexpected character (malformed). */
  bad: string;
  /** The member whose value was being read when the input stopped. */
  inValueOf: string;
  /** The last member read completely. */
  lastKey: string;
  fields: Map<string, ArgValue>;
}

class Stop {}

class Scanner {
  i = 0;
  res: ArgsScan = { status: "ok", pos: 0, bad: "", inValueOf: "", lastKey: "", fields: new Map() };
  constructor(readonly input: string[]) {}

  truncated(): never {
    this.res.status = "truncated";
    this.res.pos = this.input.length;
    throw new Stop();
  }

  malformed(): never {
    this.res.status = "malformed";
    this.res.pos = this.i;
    this.res.bad = this.input[this.i];
    throw new Stop();
  }

  peek(): string {
    if (this.i >= this.input.length) this.truncated();
    return this.input[this.i];
  }

  expect(c: string): void {
    if (this.peek() !== c) this.malformed();
    this.i++;
  }

  ws(): void {
    while (this.i < this.input.length) {
      const c = this.input[this.i];
      if (c !== " " && c !== "\t" && c !== "\n" && c !== "\r") return;
      this.i++;
    }
  }

  object(): void {
    this.expect("{");
    this.ws();
    if (this.peek() === "}") {
      this.i++;
      return;
    }
    for (;;) {
      this.ws();
      if (this.peek() !== '"') this.malformed();
      const key = this.str();
      this.ws();
      this.expect(":");
      this.ws();
      this.res.inValueOf = key;
      const v = this.value();
      this.res.inValueOf = "";
      this.res.fields.set(key, v);
      this.res.lastKey = key;
      this.ws();
      const c = this.peek();
      if (c === ",") {
        this.i++;
      } else if (c === "}") {
        this.i++;
        return;
      } else {
        this.malformed();
      }
    }
  }

  value(): ArgValue {
    const c = this.peek();
    if (c === '"') return { kind: "string", str: this.str() };
    if (c === "{" || c === "[") {
      const start = this.i;
      this.nested();
      return { kind: c === "{" ? "object" : "array", str: "", raw: this.input.slice(start, this.i).join("") };
    }
    if (c === "t") return this.literal("true", "boolean");
    if (c === "f") return this.literal("false", "boolean");
    if (c === "n") return this.literal("null", "null");
    if (c === "-" || (c >= "0" && c <= "9")) {
      this.number();
      return { kind: "number", str: "" };
    }
    this.malformed();
  }

  literal(word: string, kind: "boolean" | "null"): ArgValue {
    for (const w of word) {
      if (this.peek() !== w) this.malformed();
      this.i++;
    }
    return { kind, str: "" };
  }

  number(): void {
    while ("-+.eE0123456789".includes(this.peek())) this.i++;
  }

  nested(): void {
    let depth = 0;
    for (;;) {
      const c = this.peek();
      if (c === "{" || c === "[") {
        depth++;
        this.i++;
      } else if (c === "}" || c === "]") {
        depth--;
        this.i++;
        if (depth === 0) return;
      } else if (c === '"') {
        this.str();
      } else {
        this.i++;
      }
    }
  }

  str(): string {
    this.expect('"');
    let out = "";
    for (;;) {
      const c = this.peek();
      if (c === '"') {
        this.i++;
        return out;
      }
      if (c.codePointAt(0)! < 0x20) this.malformed();
      if (c !== "\\") {
        out += c;
        this.i++;
        continue;
      }
      this.i++; // the backslash
      const e = this.peek();
      const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
      if (e in simple) {
        out += simple[e];
        this.i++;
        continue;
      }
      if (e !== "u") this.malformed();
      this.i++;
      let r = this.hex4();
      if (r >= 0xd800 && r <= 0xdfff) {
        // A pair is two escapes; a lone half becomes U+FFFD, as Go decodes it.
        let paired = false;
        if (r <= 0xdbff && this.input[this.i] === "\\" && this.input[this.i + 1] === "u") {
          const save = this.i;
          this.i += 2;
          const r2 = this.hex4();
          if (r2 >= 0xdc00 && r2 <= 0xdfff) {
            r = 0x10000 + ((r - 0xd800) << 10) + (r2 - 0xdc00);
            paired = true;
          } else {
            this.i = save;
          }
        }
        if (!paired) r = 0xfffd;
      }
      out += String.fromCodePoint(r);
    }
  }

  hex4(): number {
    let r = 0;
    for (let k = 0; k < 4; k++) {
      const c = this.peek();
      const d = parseInt(c, 16);
      if (!/^[0-9a-fA-F]$/.test(c)) this.malformed();
      r = (r << 4) | d;
      this.i++;
    }
    return r;
  }
}

/** scanArgs scans tool-call arguments (see the comment at the top). */
export function scanArgs(s: string): ArgsScan {
  const sc = new Scanner(Array.from(s));
  try {
    sc.ws();
    if (sc.i === sc.input.length) {
      sc.res.status = "empty";
      return sc.res;
    }
    sc.object();
    sc.ws();
    if (sc.i < sc.input.length) sc.malformed();
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
  }
  return sc.res;
}
