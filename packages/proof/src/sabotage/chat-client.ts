/**
 * A minimal OpenAI-compatible chat-completions client: one POST per attempt, a timeout
 * per attempt, retries with backoff on network errors, 408, 429 and 5xx (honouring
 * Retry-After). The API key goes in the Authorization header and nowhere else: never in
 * a log line or an error message (server text is scrubbed of it).
 */
import { LlmReplyInvalidError, LlmRequestError } from '../errors.js';
import { silentLogger, type Logger } from '../options.js';

export interface ChatClientOptions {
  /** e.g. https://api.openai.com/v1 (the path up to, not including, /chat/completions). */
  baseUrl: string;
  apiKey: string;
  /** Default `gpt-4o`. */
  model?: string;
  /** Per attempt. Default 60 000. */
  timeoutMs?: number;
  /** Retries after the first attempt. Default 2. */
  maxRetries?: number;
  /** First backoff; doubles each retry. Default 500. */
  retryDelayMs?: number;
  logger?: Logger;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

const MAX_RETRY_AFTER_MS = 30_000;

export interface ChatCompletion {
  content: string;
  /** Tokens the call used, prompt and reply, when the response says. */
  totalTokens: number | null;
}

export class ChatClient {
  readonly model: string;
  private readonly url: string;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;
  private readonly logger: Logger;

  constructor(options: ChatClientOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.apiKey = options.apiKey;
    this.model = options.model ?? 'gpt-4o';
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.logger = options.logger ?? silentLogger;
  }

  /** The assistant's reply text. Asks for a JSON object reply when `json` is set. */
  async complete(messages: ChatMessage[], options: { json?: boolean; signal?: AbortSignal } = {}): Promise<string> {
    return (await this.completion(messages, options)).content;
  }

  /** The reply text and the tokens the call used (the response's `usage.total_tokens`, when it says). */
  async completion(
    messages: ChatMessage[],
    { json = false, signal }: { json?: boolean; signal?: AbortSignal } = {},
  ): Promise<ChatCompletion> {
    const body = JSON.stringify({
      model: this.model,
      messages,
      temperature: 0.7,
      ...(json ? { response_format: { type: 'json_object' } } : {}),
    });
    let lastError: RetriableError | undefined;
    for (let attempt = 0; attempt <= this.maxRetries; attempt++) {
      if (attempt > 0) await delay(lastError?.retryAfterMs ?? this.retryDelayMs * 2 ** (attempt - 1), signal);
      const started = performance.now();
      try {
        const response = await fetch(this.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${this.apiKey}` },
          body,
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(this.timeoutMs)]) : AbortSignal.timeout(this.timeoutMs),
        });
        const text = await response.text();
        this.logger.debug(
          { url: this.url, model: this.model, status: response.status, attempt, ms: Math.round(performance.now() - started) },
          'chat completion',
        );
        if (!response.ok) {
          const error = new LlmRequestError(
            `chat completion failed with HTTP ${response.status}: ${this.scrub(text).slice(0, 300)}`,
            response.status,
          ) as RetriableError;
          if (response.status !== 408 && response.status !== 429 && response.status < 500) throw error;
          error.retryAfterMs = retryAfterMs(response.headers.get('retry-after'));
          lastError = error;
          continue;
        }
        return this.contentOf(text);
      } catch (error) {
        if (error instanceof LlmReplyInvalidError || (error instanceof LlmRequestError && !isRetriable(error))) throw error;
        if (signal?.aborted) throw new LlmRequestError('chat completion aborted', undefined, { cause: signal.reason });
        if (error instanceof LlmRequestError) lastError = error;
        else {
          const timedOut = (error as Error).name === 'TimeoutError';
          lastError = new LlmRequestError(
            timedOut
              ? `chat completion timed out after ${this.timeoutMs} ms`
              : `chat completion request failed: ${this.scrub((error as Error).message)}`,
          );
        }
        this.logger.warn({ url: this.url, model: this.model, attempt, error: lastError.message }, 'chat completion attempt failed');
      }
    }
    throw lastError ?? new LlmRequestError('chat completion failed');
  }

  private contentOf(text: string): ChatCompletion {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new LlmReplyInvalidError('the chat completion response is not JSON');
    }
    const reply = parsed as { choices?: { message?: { content?: unknown } }[]; usage?: { total_tokens?: unknown } };
    const content = reply.choices?.[0]?.message?.content;
    if (typeof content !== 'string' || !content.trim())
      throw new LlmReplyInvalidError('the chat completion response has no message content');
    const tokens = reply.usage?.total_tokens;
    return { content, totalTokens: typeof tokens === 'number' && Number.isInteger(tokens) && tokens > 0 ? tokens : null };
  }

  private scrub(text: string): string {
    return this.apiKey ? text.split(this.apiKey).join('[redacted]') : text;
  }
}

type RetriableError = LlmRequestError & { retryAfterMs?: number };

function isRetriable(error: LlmRequestError): boolean {
  const status = error.status;
  return status === undefined || status === 408 || status === 429 || status >= 500;
}

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) ? Math.max(0, Math.min(ms, MAX_RETRY_AFTER_MS)) : undefined;
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new LlmRequestError('chat completion aborted', undefined, { cause: signal.reason }));
      },
      { once: true },
    );
  });
}
