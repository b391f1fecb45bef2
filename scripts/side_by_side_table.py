"""The table of scripts/side-by-side's measurements (its OUT.jsonl):
medians with ranges, and each ratio the median of the rounds' ratios
against BullMQ in the same round."""
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
rounds = sorted({row['round'] for row in rows})


def bullmq(round_, test):
    return next(r for r in rows if r['round'] == round_ and r['item'] == 'bullmq' and r['test'] == test)


def emq(round_, item):
    return next(r['res'] for r in rows if r['round'] == round_ and r['item'] == item)


# (row, BullMQ's test and field, EchoMQ's phase and field)
PLAIN = [
    ('bulk enqueue, jobs/s', 'a', 'jobs_per_s', 'enqueue', 'jobs_per_sec'),
    ('process at c50, jobs/s', 'c', 'jobs_per_s', 'process_c50', 'jobs_per_sec'),
    ('process at c1, jobs/s', 'd', 'jobs_per_s', 'process_c1', 'jobs_per_sec'),
    ('bulk enqueue, server CPU µs/job', 'a', 'server_us_per_job', 'enqueue', 'server_cpu_us_per_job'),
    ('process at c50, server CPU µs/job', 'c', 'server_us_per_job', 'process_c50', 'server_cpu_us_per_job'),
    ('process at c1, server CPU µs/job', 'd', 'server_us_per_job', 'process_c1', 'server_cpu_us_per_job'),
    ('process at c50, client CPU µs/job', 'c', 'client_us_per_job', 'process_c50', 'client_cpu_us_per_job'),
    ('process at c1, client CPU µs/job', 'd', 'client_us_per_job', 'process_c1', 'client_cpu_us_per_job'),
]


def plain(name, test, theirs, phase, ours):
    return (name, lambda r: bullmq(r, test)['res'][theirs], lambda d: d[phase][ours])


# (row, BullMQ's figure of a round, EchoMQ's figure of a report)
FIGURES = [plain(*row) for row in PLAIN[:6]] + [
    ('lifecycle (enqueue + c50), server CPU µs/job',
     lambda r: bullmq(r, 'a')['res']['server_us_per_job'] + bullmq(r, 'c')['res']['server_us_per_job'],
     lambda d: d['lifecycle_server_cpu_us_per_job']),
] + [plain(*row) for row in PLAIN[6:]] + [
    ('memory per pending job, bytes',
     lambda r: (bullmq(r, 'a')['mem_after'] - bullmq(r, 'a')['mem_before']) / 100000,
     lambda d: d['pending_memory']['bytes_per_job']),
]
COLUMNS = [('new4', 'wire 4'), ('new6', 'wire 6'), ('like4', 'wire 4 like BullMQ'),
           ('like6', 'wire 6 like BullMQ'), ('before4', 'wire 4 before'), ('before6', 'wire 6 before')]
COLUMNS = [c for c in COLUMNS if any(r['item'] == c[0] for r in rows)]
# The rows whose ratio of each round is printed after the table (the
# targets that sit near their line).
ROUNDS_SHOWN = ('process at c50, jobs/s', 'lifecycle (enqueue + c50), server CPU µs/job')


def text(value, name):
    if 'jobs/s' in name:
        return f'{value:,.0f}'
    if 'bytes' in name:
        return f'{value:.0f}'
    return f'{value:.1f}'


def cell(values, name):
    return f'{text(statistics.median(values), name)} ({text(min(values), name)}–{text(max(values), name)})'


print('| 100,000 jobs | BullMQ | ' + ' | '.join(title for _, title in COLUMNS) + ' |')
print('| --- ' * (len(COLUMNS) + 2) + '|')
by_round = []
for name, theirs, ours in FIGURES:
    cells = [cell([theirs(r) for r in rounds], name)]
    for item, title in COLUMNS:
        ratios = [ours(emq(r, item)) / theirs(r) for r in rounds]
        digits = 3 if 'lifecycle' in name else 2
        cells.append(f'{cell([ours(emq(r, item)) for r in rounds], name)} · {statistics.median(ratios):.{digits}f}×')
        if name in ROUNDS_SHOWN:
            by_round.append(f'{title}, {name}: ' + ', '.join(f'{x:.3f}' for x in ratios))
    print(f'| {name} | ' + ' | '.join(cells) + ' |')
print('\nRatios by round:')
print('\n'.join(by_round))
