/**
 * `POST /api/flows`: jobs and the dependencies between them, created in one transaction
 * (`sluice.flow`). Each job names its parents among the flow's refs, or existing jobs as
 * `{ jobId }`; each keeps its own queue's admission, caps, keys, rates and retries. A
 * refusal (a cycle, an unknown ref or parent, a full queue) leaves nothing written.
 */
import type { FastifyInstance } from 'fastify';
import type { FlowJob } from 'sluice';
import type { RouteContext } from '../context.js';
import { inRequestTrace } from '../tracing.js';
import { jobId, queueName, sendOptions } from '../schemas.js';
import { sendOptionsOf, type SendRequestBody } from './jobs.js';

const ref = { type: 'string', minLength: 1, maxLength: 200, description: "the job's name in the flow" } as const;

export const flowBody = {
  type: 'object',
  required: ['jobs'],
  additionalProperties: false,
  properties: {
    jobs: {
      type: 'array',
      minItems: 1,
      maxItems: 1000,
      items: {
        type: 'object',
        required: ['ref', 'queue'],
        additionalProperties: false,
        properties: {
          ref,
          queue: queueName,
          data: { description: 'the payload: any JSON value (default null)' },
          ...sendOptions,
          dependsOn: {
            type: 'array',
            minItems: 1,
            maxItems: 1000,
            description: 'its parents: refs of jobs of the flow, or { jobId } of jobs that exist',
            items: {
              anyOf: [ref, { type: 'object', required: ['jobId'], additionalProperties: false, properties: { jobId } }],
            },
          },
          onParentFailure: {
            type: 'string',
            enum: ['cancel', 'run'],
            description: 'a parent ending dead or cancelled cancels this job (default) or lets it run',
          },
        },
      },
    },
  },
} as const;

export const flowResponse = {
  type: 'object',
  required: ['jobs'],
  additionalProperties: true,
  properties: {
    jobs: {
      type: 'object',
      description: "each ref's job: its id, and deduplicated when a singleton key matched a job already there",
      additionalProperties: {
        type: 'object',
        required: ['id', 'deduplicated'],
        additionalProperties: true,
        properties: { id: jobId, deduplicated: { type: 'boolean' } },
      },
    },
  },
} as const;

type FlowRequestJob = SendRequestBody & { ref: string; queue: string; dependsOn?: Array<string | { jobId: string }> };

export function flowRoutes(app: FastifyInstance, { sluice, apiAuth }: RouteContext): void {
  app.post<{ Body: { jobs: FlowRequestJob[] } }>(
    '/api/flows',
    {
      onRequest: apiAuth,
      schema: {
        tags: ['producers'],
        summary: "Send jobs and the dependencies between them in one transaction: 202 with each ref's id",
        description:
          "A job depending on others waits (state waiting) until every parent has ended, then runs, with its parents' results. " +
          'A cycle, a ref used twice or a ref to no job of the flow is 400 flow_invalid; a parent that does not exist 422 parent_not_found; ' +
          'a refused send 503 or 429 as for one job. Nothing is written unless every job is.',
        body: flowBody,
        response: { 202: flowResponse },
      },
    },
    async (request, reply) => {
      const jobs: FlowJob[] = request.body.jobs.map(({ ref, queue, data, dependsOn, ...rest }) => ({
        ref,
        queue,
        data: data ?? null,
        ...sendOptionsOf(rest),
        ...(dependsOn ? { dependsOn } : {}),
      }));
      const ids = await inRequestTrace(request.headers, () => sluice.flow(jobs));
      return reply.code(202).send({ jobs: ids });
    },
  );
}
