/**
 * The classroom's workers as a process of their own, as they run beside the web process
 * that takes GitHub's webhooks: `npm run classroom` starts one. Its options come as JSON in
 * CLASSROOM_OPTIONS (the Classroom options but `sluice`), the database in DATABASE_URL; it
 * stops on SIGTERM, letting the jobs in hand finish.
 */
import { Sluice } from 'sluice';
import { Classroom, type ClassroomOptions } from './app.js';

const options = JSON.parse(process.env.CLASSROOM_OPTIONS ?? '{}') as Omit<ClassroomOptions, 'sluice'>;
const line = (level: string) => (obj: object, msg?: string) => console.error(`worker ${level}: ${msg ?? ''} ${JSON.stringify(obj)}`);
const sluice = new Sluice({
  connectionString: process.env.DATABASE_URL!,
  logger: { error: line('error'), warn() {}, info() {}, debug() {} },
});
const classroom = await Classroom.start({ ...options, sluice });
console.log('workers started');
process.once('SIGTERM', () => {
  void (async () => {
    await classroom.stop();
    await sluice.close();
    process.exit(0);
  })();
});
