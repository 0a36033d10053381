/**
 * A mission's brief as HTML for the candidate's page. Briefs are Markdown written by a
 * model or a catalog, so untrusted: markdown-it with raw HTML off escapes every tag, and
 * its link check drops `javascript:`, `vbscript:`, `file:` and non-image `data:` URLs.
 * The page's Content-Security-Policy (no inline scripts) is a second wall, not the first.
 */
import MarkdownIt from 'markdown-it';

const markdown = new MarkdownIt({ html: false, linkify: true, typographer: false });

// Links in a brief leave the page: never with the candidate's page as referrer or opener.
const defaultLinkOpen = markdown.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
markdown.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx]!.attrSet('rel', 'noopener noreferrer');
  tokens[idx]!.attrSet('target', '_blank');
  return defaultLinkOpen(tokens, idx, options, env, self);
};

export function renderBrief(brief: string): string {
  return markdown.render(brief);
}
