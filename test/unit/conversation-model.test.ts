// The conversation model's rules (test/model/invariants.ts) on hand-built observations: each rule holds on a good
// course of events and fails, naming what went wrong, on a bad one, so the model-based test can fail.
import type { Fact, RunFacts } from '../model/history';
import {
  everyMessageAnsweredOrHandedOver,
  noReplyAgainstTheOwner,
  operatorRequestsTookEffect,
  ownerByCourse,
  postedOnce,
  runsHealthy,
  sdkRacesMet,
  statusMatchesLastOutcome,
  type Observation,
  type ObservedPart,
} from '../model/invariants';

const HANDOVER = 'A person will follow up.';
const user = (id: string, text: string): ObservedPart => ({ id, type: 'comment', author: 'user', text });
const melvin = (id: string, type: string, text: string): ObservedPart => ({ id, type, author: 'melvin', text });
const run = (facts: Fact[], runId = 'r1'): RunFacts => ({ runId, startTime: '2026-11-25T00:00:00Z', facts, json: {} });
const time = '2026-11-25T00:00:01Z';
const scheduled = (id: number, activity: string, input: unknown, seenUpTo = id - 1, at = time): Fact => ({
  kind: 'scheduled',
  id,
  time: at,
  activity,
  input,
  seenUpTo,
});
const completed = (id: number, scheduledId: number, result: unknown): Fact => ({
  kind: 'completed',
  id,
  scheduledId,
  result,
});
const draft = (id: number, unanswered: string[]) =>
  scheduled(id, 'draft', { context: { unanswered_messages: unanswered } });
/** The draft run as a local activity: what its input held unanswered, the text it wrote, whether it failed. */
const localDraft = (
  id: number,
  unanswered: string[],
  { text, failed = false }: { text?: string; failed?: boolean } = {},
): Fact => ({
  kind: 'local',
  id,
  activity: 'draft',
  activityId: String(id),
  input: { context: { unanswered_messages: unanswered } },
  result: text === undefined ? null : { output: { text } },
  failed,
});

function observation(over: Partial<Observation>): Observation {
  return {
    mode: 'auto',
    handoverTexts: [HANDOVER],
    userMessages: [],
    parts: [],
    melvinStatus: null,
    calls: [],
    runs: [],
    unsettled: null,
    ...over,
  };
}

/** A turn that answered the message tagged `tag` with the reply part `partId`. */
const answering = (tag: string, partId: string, from = 1): Fact[] => [
  draft(from, [`(${tag}) When will I get paid?`]),
  scheduled(from + 1, 'sendReply', { text: 'Paid Friday.' }),
  completed(from + 2, from + 1, { part_id: partId }),
];

describe('posted once', () => {
  test('a post that took another post’s part, and a part posted twice, are named', () => {
    const good = observation({
      parts: [user('u1', 'Q'), melvin('p1', 'note', 'Validation result: ok'), melvin('p2', 'note', '✋ waits')],
      runs: [
        run([
          scheduled(1, 'addNote', { text: 'Validation result: ok' }),
          scheduled(2, 'addNote', { text: '✋ waits' }),
          completed(3, 1, { part_id: 'p1' }),
          completed(4, 2, { part_id: 'p2' }),
        ]),
      ],
    });
    expect(postedOnce(good)).toEqual([]);
    const took = observation({
      ...good,
      parts: [user('u1', 'Q'), melvin('p2', 'note', '✋ waits')],
      runs: [
        run([
          ...good.runs[0]!.facts.slice(0, 3),
          completed(4, 2, { part_id: 'p2' }),
          completed(5, 1, { part_id: 'p2' }),
        ]),
      ],
    });
    expect(postedOnce(took).join('\n')).toMatch(/2 posts took part p2 as theirs/);
    const twice = observation({ ...good, parts: [...good.parts, melvin('p3', 'note', 'Validation result: ok')] });
    expect(postedOnce(twice)).toEqual(['Melvin\'s note "Validation result: ok" was posted more than once']);
  });

  test('a reply that carries the validation note makes two posts: each part is one post’s, and checked', () => {
    const parts = [
      user('u1', 'Q'),
      melvin('r1', 'comment', 'Paid Friday.'),
      melvin('n1', 'note', 'Validation result: ok'),
    ];
    const reply = scheduled(1, 'sendReply', { text: 'Paid Friday.', note: 'Validation result: ok' });
    const withNote = observation({
      parts,
      runs: [run([reply, completed(2, 1, { part_id: 'r1', note: { part_id: 'n1' } })])],
    });
    expect(postedOnce(withNote)).toEqual([]);
    const noteFailed = observation({
      parts: parts.slice(0, 2),
      runs: [run([reply, completed(2, 1, { part_id: 'r1', note: { error: 'Intercom answered 422' } })])],
    });
    expect(postedOnce(noteFailed)).toEqual([]);
    const noteTookTheReply = observation({
      parts,
      runs: [run([reply, completed(2, 1, { part_id: 'r1', note: { part_id: 'r1' } })])],
    });
    expect(postedOnce(noteTookTheReply).join('\n')).toMatch(/2 posts took part r1 as theirs/);
  });
});

describe('no reply against the owner', () => {
  test('a reply decided after a teammate took over, or after an accepted escalation, fails; one decided before passes', () => {
    const takeover: Fact = { kind: 'signal', id: 5, time, name: 'teamAction', args: { action: 'replied', at: time } };
    const before = observation({ runs: [run([takeover, scheduled(6, 'sendReply', { text: 'Paid Friday.' }, 4)])] });
    expect(noReplyAgainstTheOwner(before)).toEqual([]);
    const after = observation({ runs: [run([takeover, scheduled(8, 'sendReply', { text: 'Paid Friday.' }, 7)])] });
    expect(noReplyAgainstTheOwner(after)).toEqual([
      'Melvin replied "Paid Friday." while the team owned the conversation',
    ]);
    const escalation: Fact = {
      kind: 'update',
      id: 9,
      time,
      name: 'requestEscalation',
      args: { reason: 'VIP' },
      seenAt: 7,
    };
    const escalated = observation({
      runs: [run([escalation, scheduled(10, 'sendReply', { text: 'Paid Friday.' }, 8)])],
    });
    expect(noReplyAgainstTheOwner(escalated)).toEqual([
      'Melvin replied "Paid Friday." after accepting a lead\'s escalation (VIP)',
    ]);
    // An escalation the workflow refused (409: it could not tell who owns the conversation) changes nothing, and a
    // hand-back it refused gives nothing back.
    const refused = observation({
      runs: [run([{ ...escalation, refused: true }, scheduled(10, 'sendReply', { text: 'Paid Friday.' }, 8)])],
    });
    expect(noReplyAgainstTheOwner(refused)).toEqual([]);
    const handBack: Fact = { kind: 'update', id: 9, time, name: 'requestHandBack', args: {}, seenAt: 7 };
    const refusedHandBack = observation({
      runs: [run([takeover, { ...handBack, refused: true }, scheduled(10, 'sendReply', { text: 'Paid Friday.' }, 8)])],
    });
    expect(noReplyAgainstTheOwner(refusedHandBack)).toEqual([
      'Melvin replied "Paid Friday." while the team owned the conversation',
    ]);
    // The escalation's own message to the user is its hand-over, not a reply.
    const told = observation({ runs: [run([escalation, scheduled(10, 'sendReply', { text: HANDOVER }, 8)])] });
    expect(noReplyAgainstTheOwner(told)).toEqual([]);
    const shadow = observation({ mode: 'shadow', runs: [run([scheduled(2, 'sendReply', { text: HANDOVER })])] });
    expect(noReplyAgainstTheOwner(shadow)).toEqual([`shadow mode sent the user "${HANDOVER}"`]);
  });

  test('a course read while a hand-over note is owed lacks it: the owner stays the team until the note lands', () => {
    const NOTE = '🚨 Escalation: User requested to talk to a human';
    const parts = [
      user('u1', 'A person please'),
      { id: 'a1', type: 'assignment', author: 'teammate', text: '', assignedTo: 'melvin' } as ObservedPart,
      melvin('h1', 'comment', HANDOVER),
    ];
    const reread = (id: number, partIds = ['a1', 'h1']): Fact => ({
      kind: 'local',
      id,
      activity: 'readOwnership',
      activityId: String(id),
      input: {},
      result: { part_ids: partIds },
      failed: false,
    });
    const handedOver = [
      scheduled(1, 'sendReply', { text: HANDOVER }),
      completed(2, 1, { part_id: 'h1' }),
      scheduled(3, 'addNote', { text: NOTE }),
    ];
    const reply = scheduled(9, 'sendReply', { text: 'Paid Friday.' }, 8);
    // Refused for good: owed. The course read (the assignment to Melvin, older, is its latest change) gives nothing back.
    const owed = observation({
      parts,
      runs: [
        run([
          ...handedOver,
          { kind: 'failed', id: 4, scheduledId: 3, message: 'Intercom answered 401' },
          reread(5),
          reply,
        ]),
      ],
    });
    expect(noReplyAgainstTheOwner(owed)).toEqual([
      'Melvin replied "Paid Friday." while the team owned the conversation',
    ]);
    // Landed: the course has it last, and says the same.
    const landed = observation({
      parts: [...parts, melvin('n1', 'note', NOTE)],
      runs: [run([...handedOver, completed(4, 3, { part_id: 'n1' }), reread(5, ['a1', 'h1', 'n1']), reply])],
    });
    expect(noReplyAgainstTheOwner(landed)).toEqual([
      'Melvin replied "Paid Friday." while the team owned the conversation',
    ]);
    // Without the note, the course's word stands: the assignment to Melvin came after the hand-over.
    const givenBack = observation({ parts, runs: [run([handedOver[0]!, handedOver[1]!, reread(5), reply])] });
    expect(noReplyAgainstTheOwner(givenBack)).toEqual([]);
  });

  test('a new workflow reads the owner from the course it fetched first; a late webhook older than the owner changes nothing', () => {
    const escalated = run([
      scheduled(2, 'addNote', { text: '🚨 Escalation: VIP\nRequested by: lead' }),
      { kind: 'closed', id: 3, how: 'completed' },
    ]);
    const parts = [user('u1', 'Q'), melvin('n1', 'note', '🚨 Escalation: VIP\nRequested by: lead')];
    const fresh = run(
      [
        {
          kind: 'local',
          id: 3,
          activity: 'fetchConversation',
          activityId: '1',
          input: null,
          result: { part_ids: ['n1'] },
          failed: false,
        },
        scheduled(9, 'sendReply', { text: 'Hi' }, 8),
      ],
      'r2',
    );
    expect(noReplyAgainstTheOwner(observation({ parts, runs: [escalated, fresh] }))).toEqual([
      'Melvin replied "Hi" while the team owned the conversation',
    ]);
    // Escalated at second 5; a teammate's assignment to Melvin from second 0, delivered after, changes nothing.
    const note = scheduled(2, 'addNote', { text: '🚨 Escalation: VIP' }, 1, '2026-11-25T00:00:05Z');
    const late = (at: string): Fact => ({
      kind: 'signal',
      id: 5,
      time: '2026-11-25T00:00:09Z',
      name: 'teamAction',
      args: { action: 'assigned', toMelvin: true, at },
    });
    const reply = scheduled(7, 'sendReply', { text: 'Hi' }, 6);
    expect(noReplyAgainstTheOwner(observation({ runs: [run([note, late('2026-11-25T00:00:00Z'), reply])] }))).toEqual([
      'Melvin replied "Hi" while the team owned the conversation',
    ]);
    expect(noReplyAgainstTheOwner(observation({ runs: [run([note, late('2026-11-25T00:00:08Z'), reply])] }))).toEqual(
      [],
    );
    expect(ownerByCourse(parts, 'auto')).toBe('team');
    expect(
      ownerByCourse(
        [...parts, { id: 'a', type: 'assignment', author: 'teammate', text: '', assignedTo: 'melvin' }],
        'auto',
      ),
    ).toBe('melvin');
    expect(ownerByCourse([user('u1', 'Q')], 'auto')).toBeNull();
  });
});

test('no reply against the owner: a teammate’s action delivered again in a later run is the same action', () => {
  const assigned = (id: number, notificationId: string, toMelvin: boolean, at: string): Fact => ({
    kind: 'signal',
    id,
    time: at,
    name: 'teamAction',
    args: { action: 'assigned', toMelvin, at, notificationId },
  });
  const first = run([
    assigned(2, 'n-team', false, '2026-11-25T00:00:05Z'),
    assigned(3, 'n-melvin', true, '2026-11-25T00:00:05Z'),
    { kind: 'closed', id: 4, how: 'continuedAsNew' },
  ]);
  const again = (notificationId: string) =>
    run(
      [assigned(2, notificationId, false, '2026-11-25T00:00:05Z'), scheduled(4, 'sendReply', { text: 'Hi' }, 3)],
      'r2',
    );
  expect(noReplyAgainstTheOwner(observation({ runs: [first, again('n-team')] }))).toEqual([]);
  // Another assignment of that second, a new one, hands it to the team.
  expect(noReplyAgainstTheOwner(observation({ runs: [first, again('n-other')] }))).toEqual([
    'Melvin replied "Hi" while the team owned the conversation',
  ]);
});

describe('operator requests take effect', () => {
  const escalationNote = melvin('n1', 'note', '🚨 Escalation: VIP\nRequested by: lead');
  test('an accepted escalation without its note, a refused one acted on, and a 503 are named', () => {
    const call = { action: 'escalate' as const, words: 'VIP', partsBefore: 1 };
    expect(
      operatorRequestsTookEffect(
        observation({ parts: [user('u1', 'Q'), escalationNote], calls: [{ ...call, status: 202 }] }),
      ),
    ).toEqual([]);
    expect(
      operatorRequestsTookEffect(observation({ parts: [user('u1', 'Q')], calls: [{ ...call, status: 202 }] })),
    ).toEqual(['escalate "VIP" (answered 202) left no 🚨 Escalation: note']);
    expect(
      operatorRequestsTookEffect(
        observation({ parts: [user('u1', 'Q'), escalationNote], calls: [{ ...call, status: 409 }] }),
      ),
    ).toEqual(['escalate "VIP" (answered 409) was refused, yet acted on']);
    expect(operatorRequestsTookEffect(observation({ calls: [{ ...call, status: 503 }] }))).toEqual([
      'the operator API answered 503 to escalate "VIP"',
    ]);
  });

  test('a 503 of a workflow not ready (its task failed) is a refusal: no effect, or it is named', () => {
    const notReady = { action: 'escalate' as const, words: 'VIP', partsBefore: 1, status: 503, notReady: true };
    expect(operatorRequestsTookEffect(observation({ parts: [user('u1', 'Q')], calls: [notReady] }))).toEqual([]);
    expect(
      operatorRequestsTookEffect(observation({ parts: [user('u1', 'Q'), escalationNote], calls: [notReady] })),
    ).toEqual(['escalate "VIP" (answered 503) was refused, yet acted on']);
    const edit = { ...notReady, action: 'edit' as const, words: 'Edited: paid Friday.' };
    const sent = melvin('c1', 'comment', 'Edited: paid Friday.');
    expect(operatorRequestsTookEffect(observation({ parts: [user('u1', 'Q')], calls: [edit] }))).toEqual([]);
    expect(operatorRequestsTookEffect(observation({ parts: [user('u1', 'Q'), sent], calls: [edit] }))).toEqual([
      'edit "Edited: paid Friday." (answered 503) was refused, yet its text was sent',
    ]);
  });

  test('an accepted hand-back of a conversation Melvin answered, and an escalation of one the team owned, are named', () => {
    const handBack = { action: 'hand_back' as const, words: 'sorted', partsBefore: 2, status: 202 };
    const backNote = melvin('b1', 'note', '↩️ Handed back to Melvin by lead: sorted.');
    // The team owned it (Melvin's escalation note): a hand-back gives it back.
    expect(
      operatorRequestsTookEffect(
        observation({ parts: [user('u1', 'Q'), escalationNote, backNote], calls: [handBack] }),
      ),
    ).toEqual([]);
    const melvins = [user('u1', 'Q'), melvin('r1', 'comment', 'Paid Friday.'), backNote];
    expect(operatorRequestsTookEffect(observation({ parts: melvins, calls: [handBack] }))).toEqual([
      'hand_back "sorted" (answered 202) handed back a conversation the team did not own (its owner: Melvin)',
    ]);
    // A teammate gave it back to Melvin just before, its webhook late: the workflow could not know, and the hand-back stands.
    const lateAssignment = {
      id: 'a1',
      type: 'assignment',
      author: 'teammate' as const,
      text: '',
      assignedTo: 'melvin' as const,
    };
    expect(
      operatorRequestsTookEffect(
        observation({
          parts: [user('u1', 'Q'), escalationNote, lateAssignment, backNote],
          calls: [{ ...handBack, partsBefore: 3 }],
        }),
      ),
    ).toEqual([]);
    const twice = [user('u1', 'Q'), escalationNote, melvin('n2', 'note', '🚨 Escalation: again\nRequested by: lead')];
    const again = { action: 'escalate' as const, words: 'again', partsBefore: 2, status: 202 };
    expect(operatorRequestsTookEffect(observation({ parts: twice, calls: [again] }))).toEqual([
      'escalate "again" (answered 202) handed over a conversation the team owned already',
    ]);
  });

  test('an approval sends the draft the lead saw, an edit the lead’s text; any other reply does not count', () => {
    const approvalNote = melvin(
      'a1',
      'note',
      "✋ Melvin's draft waits for a lead: approve, edit or reject it.\n\nPaid Friday.",
    );
    const approve = { action: 'approve' as const, words: 'approve refa', partsBefore: 2, status: 200 };
    const sent = (text: string) => [user('u1', 'Q'), approvalNote, melvin('r1', 'comment', text)];
    expect(operatorRequestsTookEffect(observation({ parts: sent('Paid Friday.'), calls: [approve] }))).toEqual([]);
    expect(operatorRequestsTookEffect(observation({ parts: sent('Paid Monday.'), calls: [approve] }))).toEqual([
      'approve "approve refa" (answered 200) sent no reply of the text the lead saw, and withheld none',
    ]);
    const edit = { action: 'edit' as const, words: 'Edited: paid Friday.', partsBefore: 2, status: 200 };
    expect(operatorRequestsTookEffect(observation({ parts: sent('Edited: paid Friday.'), calls: [edit] }))).toEqual([]);
    expect(operatorRequestsTookEffect(observation({ parts: sent('Paid Friday.'), calls: [edit] }))).toEqual([
      'edit "Edited: paid Friday." (answered 200) sent no reply of the text the lead wrote, and withheld none',
    ]);
  });

  test('the draft waiting when the lead approved stands for the ✋ note, which Intercom may have refused', () => {
    const noNote = (text: string) => [user('u1', 'Q'), melvin('r1', 'comment', text)];
    const seen = {
      action: 'approve' as const,
      words: 'approve refb',
      partsBefore: 1,
      status: 200,
      draftSeen: 'Paid Friday.',
    };
    expect(operatorRequestsTookEffect(observation({ parts: noNote('Paid Friday.'), calls: [seen] }))).toEqual([]);
    expect(operatorRequestsTookEffect(observation({ parts: noNote('Paid Monday.'), calls: [seen] }))).toEqual([
      'approve "approve refb" (answered 200) sent no reply of the text the lead saw, and withheld none',
    ]);
    // With neither the draft nor a note, no reply is the one the lead saw.
    const blind = { ...seen, draftSeen: undefined };
    expect(operatorRequestsTookEffect(observation({ parts: noNote('Paid Friday.'), calls: [blind] }))).toHaveLength(1);
  });
});

describe('status follows the last outcome', () => {
  test('a status left from an earlier turn, or no snooze after the last outcome, is named', () => {
    const parts = [user('u1', 'Q'), melvin('r1', 'comment', 'Paid Friday.'), melvin('s1', 'snoozed', '')];
    expect(statusMatchesLastOutcome(observation({ parts, melvinStatus: 'success' }))).toEqual([]);
    const handedOver = [...parts, melvin('n1', 'note', '🚨 Escalation: VIP')];
    expect(statusMatchesLastOutcome(observation({ parts: handedOver, melvinStatus: 'success' }))).toEqual([
      'Melvin Status is success, but the last outcome was a hand-over (ROUTE_TO_TEAM)',
      'the conversation was not snoozed after its last outcome (a hand-over)',
    ]);
  });

  test('each kind of hand-over has its own status; a withheld reply is the team’s, not snoozed', () => {
    const handOver = (reason: string, status: string) =>
      statusMatchesLastOutcome(
        observation({
          parts: [user('u1', 'Q'), melvin('n1', 'note', `🚨 Escalation: ${reason}`), melvin('s1', 'snoozed', '')],
          melvinStatus: status,
        }),
      );
    expect(handOver('No safe answer: the draft found no reply', 'NO_SAFE_ANSWER')).toEqual([]);
    expect(handOver('Planning failed: the model endpoint answered 500', 'error')).toEqual([]);
    expect(handOver('User requested to talk to a human', 'ROUTE_TO_TEAM')).toEqual([]);
    // Any hand-over status used to pass for any kind.
    expect(handOver('No safe answer: the draft found no reply', 'error')).toEqual([
      'Melvin Status is error, but the last outcome was a hand-over (NO_SAFE_ANSWER)',
    ]);
    expect(handOver('Validation failed - see validation note', 'ROUTE_TO_TEAM')).toEqual([
      'Melvin Status is ROUTE_TO_TEAM, but the last outcome was a hand-over (VALIDATION_FAILED)',
    ]);
    // A teammate who closed the conversation after the hand-over excuses its snooze, which would reopen it; a close
    // before the hand-over does not.
    const escalated = melvin('n1', 'note', '🚨 Escalation: User requested to talk to a human');
    const close = (id: string): ObservedPart => ({ id, type: 'close', author: 'teammate', text: '' });
    const closedAfter = [user('u1', 'Q'), escalated, user('u2', 'Q2'), close('c1')];
    expect(statusMatchesLastOutcome(observation({ parts: closedAfter, melvinStatus: 'ROUTE_TO_TEAM' }))).toEqual([]);
    const closedBefore = [user('u1', 'Q'), close('c1'), user('u2', 'Q2'), escalated];
    expect(statusMatchesLastOutcome(observation({ parts: closedBefore, melvinStatus: 'ROUTE_TO_TEAM' }))).toEqual([
      'the conversation was not snoozed after its last outcome (a hand-over)',
    ]);
    // A close the user has not written after ends the course: a note of Melvin's that lands after it (owed until then)
    // asks for no snooze, which would reopen the conversation. Once the user writes again, the snooze is due again.
    const landedAfterClose = [user('u1', 'Q'), close('c1'), escalated];
    expect(statusMatchesLastOutcome(observation({ parts: landedAfterClose, melvinStatus: 'ROUTE_TO_TEAM' }))).toEqual(
      [],
    );
    const repliedAfterClose = [user('u1', 'Q'), close('c1'), melvin('r1', 'comment', 'Paid Friday.')];
    expect(statusMatchesLastOutcome(observation({ parts: repliedAfterClose, melvinStatus: 'success' }))).toEqual([]);
    const reopened = [user('u1', 'Q'), close('c1'), user('u2', 'Q2'), melvin('r2', 'comment', 'Paid Friday.')];
    expect(statusMatchesLastOutcome(observation({ parts: reopened, melvinStatus: 'success' }))).toEqual([
      'the conversation was not snoozed after its last outcome (a reply)',
    ]);
    const withheld = [user('u1', 'Q'), melvin('w1', 'note', 'ℹ️ A teammate took over while Melvin was answering')];
    expect(statusMatchesLastOutcome(observation({ parts: withheld, melvinStatus: 'ROUTE_TO_TEAM' }))).toEqual([]);
    expect(statusMatchesLastOutcome(observation({ parts: withheld, melvinStatus: 'success' }))).toEqual([
      'Melvin Status is success, but the last outcome was a reply withheld for a teammate (ROUTE_TO_TEAM)',
    ]);
  });
});

describe('every message answered or handed over', () => {
  test('a message no reply answered and no note handed over, and one answered twice, are named', () => {
    const userMessages = [
      { partId: 'u1', tag: 'refa' },
      { partId: 'u2', tag: 'refb' },
    ];
    const parts = [user('u1', '(refa) Q'), user('u2', '(refb) Q'), melvin('r1', 'comment', 'Paid Friday.')];
    const lost = observation({ userMessages, parts, runs: [run(answering('refa', 'r1'))] });
    expect(everyMessageAnsweredOrHandedOver(lost)).toEqual([
      'the user\'s message "refb" was neither answered nor named in a note to the team',
    ]);
    const named = observation({
      userMessages,
      parts: [...parts, melvin('n1', 'note', '💬 The user wrote again.\nThe talent wrote:\n- “(refb) Q”')],
      runs: lost.runs,
    });
    expect(everyMessageAnsweredOrHandedOver(named)).toEqual([]);
    // A note after it that does not name it, or a teammate acting after it, hands nothing over.
    const unnamed = observation({
      userMessages,
      parts: [
        ...parts,
        { id: 't1', type: 'comment', author: 'teammate', text: 'Hi, a teammate here.' },
        melvin('n1', 'note', '💬 The user wrote again.'),
      ],
      runs: lost.runs,
    });
    expect(everyMessageAnsweredOrHandedOver(unnamed)).toEqual([
      'the user\'s message "refb" was neither answered nor named in a note to the team',
    ]);
  });

  test('a message that came while the team owned the conversation is handed over once the team is told the user wrote again', () => {
    const userMessages = [
      { partId: 'u1', tag: 'refa' },
      { partId: 'u2', tag: 'refb' },
      { partId: 'u3', tag: 'refc' },
    ];
    const escalation = melvin(
      'n1',
      'note',
      '🚨 Escalation: User requested to talk to a human\nThe talent wrote:\n- “(refa) Q”',
    );
    const told = melvin('n2', 'note', '💬 The user wrote again.\nThe talent wrote:\n- “(refb) Q”');
    const parts = [user('u1', '(refa) Q'), escalation, user('u2', '(refb) Q'), told, user('u3', '(refc) Q')];
    expect(everyMessageAnsweredOrHandedOver(observation({ userMessages, parts }))).toEqual([]);
    // Without the 💬 note the team never heard of the later messages.
    const untold = parts.filter((p) => p !== told);
    expect(everyMessageAnsweredOrHandedOver(observation({ userMessages, parts: untold }))).toEqual([
      'the user\'s message "refb" came while the team owned the conversation, and the team was never told the user wrote again',
      'the user\'s message "refc" came while the team owned the conversation, and the team was never told the user wrote again',
    ]);
    // A 💬 note from an earlier period of the team's (before a hand-back) tells nothing of this one.
    const back = melvin('b1', 'note', '↩️ Handed back to Melvin by lead: ok.');
    const again = melvin('n3', 'note', '🚨 Escalation: VIP\nRequested by: lead');
    const later = [...parts, back, again, user('u4', '(refd) Q')];
    expect(
      everyMessageAnsweredOrHandedOver(observation({ userMessages: [{ partId: 'u4', tag: 'refd' }], parts: later })),
    ).toEqual([
      'the user\'s message "refd" came while the team owned the conversation, and the team was never told the user wrote again',
    ]);
    const twice = observation({
      userMessages: userMessages.slice(0, 1),
      parts: [user('u1', '(refa) Q'), melvin('r1', 'comment', 'Paid Friday.'), melvin('r2', 'comment', 'Paid Friday.')],
      runs: [run([...answering('refa', 'r1'), ...answering('refa', 'r2', 10)])],
    });
    expect(everyMessageAnsweredOrHandedOver(twice)).toEqual(['the user\'s message "refa" was answered 2 times']);
  });

  test('a local draft answers what its input held; the last draft before the reply counts, a failed one does not', () => {
    const userMessages = [
      { partId: 'u1', tag: 'refa' },
      { partId: 'u2', tag: 'refb' },
    ];
    const parts = [user('u1', '(refa) Q'), user('u2', '(refb) Q'), melvin('r1', 'comment', 'Paid Friday.')];
    const reply = [scheduled(5, 'sendReply', { text: 'Paid Friday.' }), completed(6, 5, { part_id: 'r1' })];
    const draftedAgain = run([localDraft(1, ['(refa) Q']), localDraft(2, ['(refa) Q', '(refb) Q']), ...reply]);
    expect(everyMessageAnsweredOrHandedOver(observation({ userMessages, parts, runs: [draftedAgain] }))).toEqual([]);
    const lastFailed = run([
      localDraft(1, ['(refa) Q']),
      localDraft(2, ['(refa) Q', '(refb) Q'], { failed: true }),
      ...reply,
    ]);
    expect(everyMessageAnsweredOrHandedOver(observation({ userMessages, parts, runs: [lastFailed] }))).toEqual([
      'the user\'s message "refb" was neither answered nor named in a note to the team',
    ]);
  });
});

describe('a shadow note owed by one run and posted by the next', () => {
  const userMessages = [
    { partId: 'u1', tag: 'refa' },
    { partId: 'u2', tag: 'refb' },
  ];
  const shadow = (text: string) => `👁 Shadow mode: Melvin would have replied:\n\n${text}`;
  const note = (id: number, text: string, partId: string) => [
    scheduled(id, 'addNote', { text: shadow(text) }),
    completed(id + 1, id, { part_id: partId }),
  ];
  const parts = [
    user('u1', '(refa) Q'),
    user('u2', '(refb) Q'),
    melvin('n1', 'note', shadow('Paid Friday.')),
    melvin('n2', 'note', shadow('Your contract is in the app.')),
  ];

  test('answers what the draft that wrote it answered, not the posting run’s draft', () => {
    // The first run could not post its note (a 401 on every note): the second posts it, then its own.
    const first = run([localDraft(1, ['(refa) Q'], { text: 'Paid Friday.' })], 'r1');
    const second = run(
      [
        localDraft(1, ['(refb) Q'], { text: 'Your contract is in the app.' }),
        ...note(5, 'Paid Friday.', 'n1'),
        ...note(7, 'Your contract is in the app.', 'n2'),
      ],
      'r2',
    );
    const o = observation({ mode: 'shadow', userMessages, parts, runs: [first, second] });
    expect(everyMessageAnsweredOrHandedOver(o)).toEqual([]);
  });

  test('a note no draft wrote counts for the posting run’s last draft, so two of them answer it twice', () => {
    const only = run(
      [
        localDraft(1, ['(refb) Q'], { text: 'Something else.' }),
        ...note(5, 'Paid Friday.', 'n1'),
        ...note(7, 'Your contract is in the app.', 'n2'),
      ],
      'r1',
    );
    const o = observation({ mode: 'shadow', userMessages, parts, runs: [only] });
    expect(everyMessageAnsweredOrHandedOver(o)).toEqual([
      'the user\'s message "refa" was neither answered nor named in a note to the team',
      'the user\'s message "refb" was answered 2 times',
    ]);
  });
});

describe('runs healthy', () => {
  test('a non-deterministic task, a failed run and a conversation that never settled are named; an unhandled command is ordinary', () => {
    const facts: Fact[] = [
      { kind: 'taskFailed', id: 4, cause: 'WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND', message: '' },
      { kind: 'taskFailed', id: 8, cause: 'WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR', message: 'TMPRL1100' },
      { kind: 'closed', id: 9, how: 'failed' },
    ];
    expect(runsHealthy(observation({ runs: [run(facts)], unsettled: 'still busy' }))).toEqual([
      'the conversation never settled: still busy',
      'a workflow task of run r1 failed (WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR): TMPRL1100',
      'run r1 ended failed',
    ]);
  });

  describe('sdk-core’s race on a cancelled agent call, retried at once, is counted, not named', () => {
    const RACE = 'WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR';
    const INVALID = '[TMPRL1100] Nondeterminism error: Invalid transition in state machine';
    const marker = (id: number, activity: string): Fact => ({
      kind: 'local',
      id,
      activity,
      activityId: String(id),
      input: null,
      result: null,
      failed: false,
    });
    const cancel: Fact = { kind: 'cancelRequested', id: 6, time };
    const failure = (message = INVALID): Fact => ({ kind: 'taskFailed', id: 8, cause: RACE, message });
    const update = (id: number): Fact => ({
      kind: 'update',
      id,
      time,
      name: 'requestEscalation',
      args: {},
      seenAt: id,
    });
    const judged = (facts: Fact[]) => {
      const o = observation({ runs: [run(facts)] });
      return { problems: runsHealthy(o), races: sdkRacesMet(o) };
    };

    test.each([
      ['a cancel, then Draft’s result', [marker(5, 'coverage'), cancel, failure(), marker(10, 'draft')]],
      [
        'a lead’s signal, then a tool’s result',
        [
          marker(5, 'plan'),
          { kind: 'signal', id: 6, time, name: 'forceEscalation', args: null },
          failure(),
          marker(10, 'callTool'),
        ],
      ],
      ['a cancel at the run’s first task, then Plan’s result', [cancel, failure(), marker(10, 'plan')]],
      // A 5,000-case run met it so: the update the failed task met is recorded as accepted by the task after it.
      [
        'a lead’s update accepted by the task after, then Coverage’s result',
        [marker(5, 'plan'), failure(), update(9), marker(10, 'coverage')],
      ],
    ] as [string, Fact[]][])('%s', (_name, facts) => {
      expect(judged(facts)).toEqual({ problems: [], races: 1 });
    });

    test.each([
      [
        'the call after it is a read, which is never cancelled',
        [marker(5, 'plan'), cancel, failure(), marker(10, 'fetchConversation')],
      ],
      [
        'another nondeterminism',
        [
          marker(5, 'plan'),
          cancel,
          failure('[TMPRL1100] Nondeterminism error: Activity type mismatch'),
          marker(10, 'draft'),
        ],
      ],
      ['nothing came that could cancel', [marker(5, 'plan'), failure(), marker(10, 'draft')]],
      ['the update came after the next call recorded', [marker(5, 'plan'), failure(), marker(9, 'draft'), update(10)]],
      ['the cancel came before the last call recorded', [cancel, marker(7, 'plan'), failure(), marker(10, 'draft')]],
      [
        'the next task scheduled an activity first',
        [marker(5, 'plan'), cancel, failure(), scheduled(9, 'addNote', {}), marker(10, 'draft')],
      ],
    ] as [string, Fact[]][])('still named when %s', (_name, facts) => {
      expect(judged(facts).problems).toHaveLength(1);
      expect(judged(facts).races).toBe(0);
    });
  });
});
