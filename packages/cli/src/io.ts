/** Where a command writes, so tests can run the program in-process and read what it printed. */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export const processIo: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
};

/** Exit codes: 0 an accepted proof, 1 a proof (or search) that was not accepted, 2 an error. */
export const EXIT_ACCEPTED = 0;
export const EXIT_NOT_ACCEPTED = 1;
export const EXIT_ERROR = 2;
