import { readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";

// Mirror the build's `--loader:.css=text`: importing a .css file gives its text.
const cssAsText = {
  name: "css-as-text",
  enforce: "pre",
  async resolveId(source, importer) {
    if (!source.endsWith(".css")) return null;
    const resolved = await this.resolve(source, importer, { skipSelf: true });
    return resolved ? `\0css-text:${resolved.id}` : null;
  },
  load(id) {
    if (!id.startsWith("\0css-text:")) return null;
    const text = readFileSync(id.slice("\0css-text:".length), "utf8");
    return `export default ${JSON.stringify(text)};`;
  },
};

export default defineConfig({
  plugins: [cssAsText],
  test: { environment: "node", include: ["test/**/*.test.js"] },
});
