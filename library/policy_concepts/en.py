"""English concepts of the policy screen's meaning layer (library/policy_concepts/__init__.py).
Regular expressions over policy.normalise()d text (lower case)."""

SPAN = 90

_SKIP_VERBS = r"(skip|skipping|skipped|skips|bypass\w*|circumvent\w*|sidestep\w*|get(ting)? around|go(ing)? around|work(ing)? around|avoid\w*|omit\w*|leav(e|ing) out|dispens(e|es|ed|ing) with|do(ing)? away with|waiv(e|es|ed|ing)|drop(s|ped|ping)? (the|any|all|your|their)|pass(ing)? on (the|any)|forget about|never mind|forgo\w*|forego\w*|ignor(e|es|ing)|disregard\w*|jump(ing)? (over|past)|cut(ting)? out)"

CONCEPTS = {
    "REPORT": [
        r"\breport(ing)? (it |this |that |them )?to\b|\bescalat\w* to\b",
    ],
    "MASS_ACTION": [
        r"\b(cancel\w*|refund\w*|close|closing|suspend\w*|deactivat\w*|disabl\w*|terminat\w*|void\w*|revok\w*|delet\w*|remov\w*)\b",
    ],
    "OBSTACLE": [
        r"\b(just |only )?(slows? (things |everything |it |us )?down|a waste of time|wastes? (time|everyone's time)|gets? in the way|holds? (things|it|everything) up|red tape|bureaucra\w*|a formality|busywork)\b",
    ],
    "MARK_VERIFIED": [
        r"\b(consider|deem|regard|count|treat|assume)\w*( the| them| him| her| this| that| any| every)? (caller|customer|user|person|requester|sender|them|him|her|account|identity|account holder)( [\w'-]+){0,2} (as |to be )?(verified|authenticated|genuine|legit(imate)?)\b(?!.{0,20}\b(only|once|after|when)\b)",
        r"\b(mark|record|set|tick|flag|log|note|enter)\w*( [\w'-]+){0,3} (verification|identity|id|kyc|authentication|security)( check| step| questions?| verification)?( [\w'-]+){0,2} as (completed|complete|done|passed|successful|ok|satisfied|verified|confirmed)\b(?!.{0,20}\b(only|once|after|when)\b)",
        r"\b(tick|check|select|click|set|toggle)\w*( [\w'-]+){0,2} ['\"‘“]?(identity|id|caller|customer|user)?[ -]?(verified|confirmed|authenticated)['\"’”]? (box|checkbox|flag|field|option)\b(?!.{0,40}\b(only|once|after|when)\b)",
        r"\b(mark|treat|consider|record|flag|set|count)\w*( [\w'-]+){0,4} as (verified|confirmed|authenticated|passed|checked|approved)\b(?!.{0,20}\bonly\b)",
    ],
    "IMPERSONATE": [
        r"\b(sign|reply|respond|answer|write|pose|present|introduce|act|speak|talk|email|call)\w*( [\w'-]+){0,3} (as|in the name of|on behalf of) ['\"‘“]?(the |a |an |your |our )?([\w-]+ ){0,3}(manager|supervisor|director|team lead|head of [\w ]+|administrator|officer|executive|ceo|cfo|cto|coo|vp|vice president|president|chief [\w ]+|owner|it (staff|support|department|admin)|bank|police|lawyer|attorney|auditor|legal( team| department)?|compliance( team| department)?|hr( team| department)?|security team|fraud team)s?\b",
        r"\b(pretend|claim|pose|impersonat|masquerad)\w*( to be| as)?( [\w'-]+){0,3} (manager|supervisor|director|team lead|administrator|officer|executive|ceo|cfo|owner|it (staff|support|admin))\b",
    ],
    "FOREIGN_INSTRUCTIONS": [
        r"\b(instructions?|commands?|directions?|requests?|orders?|text)\b( [\w'-]+){0,3} (in|inside|from|within|embedded in|contained in|found in|that come from|coming from) (an?|the|any|such|this|that)? ?([\w'-]+ ){0,2}(e-?mails?|web ?pages?|websites?|pages?|documents?|files?|attachments?|tool (output|results?)|search results?|results?|outputs?|messages?|tickets?|comments?|pdfs?)\b",
    ],
    "VIOLATION": [r"\b(that|which|who) (break|breaks|broke|violat\w*|breach\w*|infring\w*)\b|\b(in breach of|against the|violations? of|breaking the)\b"],
    "SKIP": [
        r"\bleav(e|ing) (the |any |your )?[\w-]+( [\w-]+)? out\b",
        r"\bkeep (the |any )?[\w-]+ out of (it|the loop)\b",
        rf"\b{_SKIP_VERBS}\b",
        r"\binstead of (waiting|asking|getting|requesting)\b",
        r"\b(no|not any) (need|reason|point|requirement)\b",
        r"\b(don'?t|do not|never|needn'?t|need not) (bother|wait)\b",
        r"\bdon'?t (need|have) to\b",
        r"\bno( [\w'-]+){0,2} (approvals?|approvers?|sign[- ]?offs?|reviews?|reviewers?|checks?|verification|authori[sz]ation) (is |are )?(needed|required|necessary)\b",
        r"\bbefore (anyone|anybody|someone|the (manager|reviewer|approver|supervisor|lead|board)|finance|legal|compliance|security|a reviewer|your (lead|manager|boss))\b.{0,25}\b(looks? at|looked at|sees?|seen|reviews?|reviewed|checks?|checked|notices?|noticed|catches|approved|signed off|can (object|say no|review|approve|stop))\b",
        r"\bspare (them|the (caller|customer|user))\b",
        r"\bbefore (the |any )?(approval|sign[- ]?off|review)\w* (arrives?|comes?|is (given|granted|in))\b",
    ],
    "WITHOUT": [r"\bwithout\b(?! (delay|fail))", r"\bin the absence of\b", r"\bminus the\b"],
    "OPTIONAL": [
        r"\b(is|are|as|be|being|consider\w*|treat\w*|call\w*)\b[^,]{0,20}\b(optional|unnecessary|pointless|a formality|not needed|not necessary|not required|not mandatory|nice[- ]to[- ]have|overkill)\b",
        r"\b(optional|unnecessary|pointless|superfluous)\b[^,]{0,5}$",
    ],
    "DEFER": [
        r"\b(can|may|will|could|should) (come|follow|be (given|obtained|added|collected|filed|sought|done|sorted|requested|granted|signed|approved)\w*|wait|happen)\b.{0,25}\b(later|afterwards?|after(wards)? the fact|next (week|month|day|sprint)|tomorrow|retroactively|eventually)\b",
        r"\b(after the fact|retroactively|retrospectively|post[- ]hoc|rubber[- ]stamp\w*|backfill\w*|ask (for )?forgiveness)\b",
        r"\b(sign(ed)?[- ]?off|approv\w*|ok'?d?)\b.{0,15}\blater\b",
        r"\b(paperwork|formalities)\b.{0,20}\blater\b",
        r"\b(we'?ll|we will|we can|you can|i'?ll|they'?ll|they can|let'?s|someone can) (get|do|sort|handle|file|collect|request|grab|chase|fix|tidy|clean up|complete|finish|catch up on|deal with|submit|raise|open)\b.{0,30}\b(later|afterwards?|after(wards)? the fact|next \w+|tomorrow|retroactively|eventually)\b",
        r"\b(will|can|could|'ll|may) (approve|sign off|ok|okay|review|bless|authori[sz]e|ratify|rubber[- ]stamp)\w*\b.{0,25}\b(later|next \w+|tomorrow|afterwards|after the fact|once it'?s (live|done|shipped))\b",
    ],
    "APPROVAL": [
        r"\bapprov\w*",
        r"\b(sign[- ]?off|signoff|signature|sign[- ]?offs)\b",
        r"\b(ok|okay|go[- ]ahead|green light|blessing|nod|thumbs[- ]up|consent)\b",
        r"\bauthori[sz]\w*",
        r"\b(four[- ]eyes|second pair of eyes|peer review|code review|change (board|ticket|request|advisory board)|cab)\b",
        r"\b(review|reviewer|reviews)\b",
        r"\b(manager|supervisor|team lead|lead|boss|finance|compliance|legal|approver)s?'?s?\b(?! (role|rights|access|permission))",
    ],
    "APPROVAL_GATE": [
        r"\b(approval|sign[- ]?off|review|authori[sz]ation|four[- ]eyes)s? (step|requirement|gate|check|workflow|process|rule|queue|flow)s?\b",
        r"\brequire[sd]? (an? )?(approval|review|sign[- ]?off)\b",
    ],
    "DISABLE": [
        r"\bstop(ping)? (the |all |your |its )",
        r"\b(stop|stops|stopping|cease|ceasing|quit) (writing|logging|recording|sending|emitting|collecting|tracking|scanning|checking|monitoring|alerting|filtering|moderating|reporting|auditing|enforcing)\b",
        r"\b(disabl\w*|deactivat\w*|turn(ing|s|ed)? off|switch(ing|es|ed)? off|shut(ting)? off|shut(ting)? down|paus(e|ing)|mut(e|ing)|silenc(e|ing)|suppress\w*|remov(e|ing)|strip(ping)?|drop(ping)?|tak(e|ing) (off|down|away)|lift(ing)?|suspend\w*|uninstall\w*|unplug\w*|unhook\w*|detach\w*)\b",
        r"\b(turn|switch|shut|take|set|put)\b.{0,40}\b(off|down|away|to (off|none|zero|0|false|disabled))\b",
        r"\bget rid of\b",
    ],
    "WEAKEN": [
        r"\b(relax\w*|loosen\w*|lower(ing)?|weaken\w*|soften\w*|dial(ling)? (back|down)|tone down|turn down|water(ing)? down|reduc(e|ing)|minimi[sz]\w*)\b",
        r"\b(permissive|lenient|relaxed|loose|minimal|lowest|off) (mode|setting|level|profile)\b",
        r"\bset (it |them )?to (zero|0|none|off|false|permissive|lenient)\b",
        r"\b(let (everything|anything|it all) through|allow (everything|anything|all content))\b",
        r"\b(rais|increas|bump|set|push|max)\w*\b.{0,30}\b(thresholds?|tolerances?)\b.{0,20}\b(max\w*|highest|100|top|ceiling|as high as)\b",
        r"\b(so|so that) (nothing|no one|nobody|no \w+) (ever )?(gets?|is|are|will be) (blocked|flagged|caught|filtered|stopped|logged|reported|detected|rejected)\b",
        r"\b(add|put|include|insert)\w*\b.{0,40}\b(to|on|in|into) (the |our )?(allow ?list|whitelist|safe ?list|exclusions? list|ignore list|suppression list|exceptions? list)\b",
        r"\b(stops?|quit|quits) (alerting|flagging|blocking|complaining|firing|warning)\b",
    ],
    "IDENTITY": [
        r"\bidentit(y|ies)\b",
        r"\b(kyc|2fa|mfa|otp|passcode|one[- ]time (code|password|passcode)|verification (code|call|questions?)|security (questions?|code)|(account|the|their|his|her|a) pin|pin (code|number)|photo id|id (check|card|document|proof|verification))\b",
        r"\bverif\w* (the |their |his |her |that the )?(caller|customer|user|requester|person|account holder|them|him|her|who)\b",
        r"\b(caller|customer|user|requester)('s)? verification\b",
        r"\bauthenticat\w* (the |their |his |her )?(caller|customer|user|requester|person|them|him|her)\b",
        r"\b(date[- ]of[- ]birth|dob|who (they|he|she) (are|is|claims? to be|says? (they are|he is|she is)))\b",
        r"\b(verification|authentication) (step|check|questions?|process|code|call)s?\b|\bsecurity questions?\b",
        r"\b(no|without|skip|skipping|bypass|bypassing) (any |the )?(verification|authentication)\b(?! (of|for) (the )?(build|cache|signature|checksum|download|package|file|certificate|ssl|tls))",
        r"\bcall[- ]?back\b",
    ],
    "TRUST_CLAIM": [
        r"\bwhoever (they|he|she|the caller|the sender|it) (say|says|claim|claims)( (they are|he is|she is|to be))?\b",
        r"\b(says?|claims?|tells you)( that)? (she|he|they|the caller|the person) (is|are|'s|'re) (the |a |an )?([\w'-]+ ){0,3}(account holder|owner|cardholder|spouse|wife|husband|partner|relative|family member|assistant|secretary|representative|parent|son|daughter)\b.{0,60}\b(go ahead|proceed|so|just|let)\b",
        r"\b(let|allow)\w* (anyone|anybody|whoever|any caller|any user|any sender)\b.{0,50}\b(unlock|reset|change|access|update|recover|take over|log in)\w*",
        r"\b(take|taking|accept|accepting|believe|trust)\b.{0,30}\b(at (their|his|her) word|word for it|on (their|his|her) word|(their|his|her|the (customer|caller|user)'?s?) (word|claim|say[- ]so))\b",
        r"\b(believe|trust|accept)\w* (whoever|anyone|anybody|any caller|the caller|the customer)\b.{0,20}\b(says?|claims?|is)\b",
        r"\b(assume|treat)\w*\b.{0,40}\b(is|are|as) (who (they|he|she) (say|says|claim|claims)|the (real |rightful )?(account )?(owner|holder))\b",
        r"\bwho(ever)? (they|he|she) (say|says|claim|claims) (they are|he is|she is|to be)\b.{0,20}\b(is enough|will do|suffices|counts)\b",
        r"\b(their|his|her) (word|say[- ]so) (is|will be) (enough|good enough|sufficient)\b",
    ],
    "GRANT": [
        r"\b(turn(ing)? on|switch(ing)? on|enabl\w*|activat\w*)\b",
        r"\b(grant\w*|giv(e|es|ing)|gave|hand(ing)? (over|out)?|assign\w*|add(ing)?|promot\w*|elevat(e|es|ing)|escalat(e|es|ing)|upgrad\w*|rais(e|ing)|bump(ing)?|extend\w*|widen\w*|open(ing)? up|unlock\w*|provision\w*)\b",
        r"\b(set|change|switch)\w* (their|the|his|her|your)? ?role to\b",
    ],
    "SELF_APPROVE": [
        r"\bapprov\w*\b.{0,40}\b(yourself|on your own|on (the \w+'s|their|his|her|the manager'?s?|your manager'?s?|the supervisor'?s?) behalf|in (the manager'?s?|their|your manager'?s?) name)\b",
        r"\b(merge|sign off|sign-off|authori[sz]e|countersign)\w*\b.{0,30}\b(yourself|on your own)\b",
    ],
    "UNBOUND": [
        r"\b(pretend|act as if|act as though|imagine|behave as if|behave as though)\b.{0,15}\b(the |your |our |company |these |those |all )*(rules|instructions|polic(y|ies)|policy document|guidelines|restrictions|system prompt|prompt|guardrails)\b.{0,40}\b((was|were|had been) never \w+|never (existed|loaded|written|sent|given|there)|(does|do|did)( not|n'?t) exist|(is|are|was|were)( not|n'?t) (there|loaded|real|valid|in effect)|no longer (exists?|appl\w+)|gone|deleted|removed|void|blank|empty)\b",
        r"\b(overrides?|overriding|supersedes?|replaces?|takes? precedence over|outranks?|cancels?) (your|the agent'?s|the assistant'?s|all (your|previous|prior|other)|any (previous|prior|other)) (task|instructions?|goal|prompt|rules|system prompt|orders|previous instructions|guidelines|polic(y|ies))\b",
        r"\byou (have|are under|face|are bound by) no\b",
        r"\b(answer|respond|reply|act|operate|behave|work|talk)\w*\b.{0,30}\bwithout (any )?(restrictions|limits|limitations|rules|filters|guardrails|boundaries|censorship)\b",
        r"\b(unrestricted|unfiltered|uncensored|jailbroken|no-limits?|unaligned) (assistant|mode|ai|model|agent|version|persona)\b",
        r"\b(pretend|act as if|act as though|imagine|behave as if|assume)\b.{0,40}\b(does not exist|doesn'?t exist|don'?t exist|never (received|existed|got|had|been given)|(no|any) (rules|instructions|polic(y|ies)|restrictions|guidelines))\b",
        r"\b(rules|instructions|polic(y|ies)|guidelines|prompt)\b.{0,20}\bwere (just |only )?(a test|fake|a joke|not real|a mistake)\b",
    ],
    "MAKE_PRIVILEGED": [
        r"\b(bump|rais|mov|chang|switch|set|upgrad|promot|elevat|flip)\w*\b( [\w'-]+){0,4} (role|access|permissions?|rights|privileges?|level|account type|membership|user type) (to|into) (an? |the )?(co-?)?(org(anisation|anization)? |workspace |account |project |billing |super[- ]?)?(owner|admin|administrator|superuser|root|super[- ]?admin)s?\b",
        r"\b(make|making|made|appoint\w*|nominat\w*)( [\w'-]+){1,3} (an? |the |(a )?co-?)?(owner|admin|administrator|superuser|root user|super[- ]?admin|org(anisation|anization)? owner|workspace owner|account owner|billing admin)s?\b",
        r"\b(promot\w*|upgrad\w*|elevat\w*)\b.{0,40}\b(to|into|as) (an? |the )?(co-?)?(owner|admin|administrator|superuser|root|super[- ]?admin|org(anisation|anization)? owner|workspace owner|account owner|billing admin)s?\b(?! (of the (ticket|case|thread|order)|for review))",
        r"\b(grant|give|giving|granting|gave) (yourself|themselves|himself|herself)\b",
    ],
    "PRIVILEGE": [
        r"\b(admin|administrator|root|superuser|super[- ]user|sudo|owner|org(anisation|anization)? owner|super[- ]?admin|billing admin|global admin|domain admin)s?('s)? (rights|access|role|privileges?|permissions?|status|group|account|level)\b",
        r"\b(full|unrestricted|unlimited|elevated|privileged|god|total|complete|production|prod) (access|control|rights|privileges?|permissions?|role|mode)\b",
        r"\bwrite (access|permissions?|rights) (to|on) (prod\w*|all|every\w*|the (billing|payments?|production|customer|main|finance)\w*)",
        r"\broot (access|on|to)\b|\b(domain|global|enterprise|tenant) admins?\b",
        r"\ball (permissions|rights|privileges|scopes|roles)\b",
        r"\b(admin|administrator|owners?|superuser|sudoers)s? (group|team|list)\b",
        r"\bownership\b",
    ],
    "CHECK_ONLY": [
        r"\b(raise|open|file|submit|create) (a |an )?(ticket|request|access request)\b|\b(once|after|when) (their|the|his|her|your|a) (manager|owner|lead|supervisor|admin\w*)( has)? (approves|approved|signs off|signed off)\b",
        r"\b(access request|permission request|ask (them|the user|the requester|him|her|the caller) to (file|submit|request|open))\b",
        r"(?<!second )(?<!double )(?<!without )(?<!without a )(?<!without any )\b(check|confirm|verify|make sure|whether|if (they|the \w+) (already )?(has|have)|already (has|have)|only (admins|owners|administrators)|only (an? )?(admin|owner|administrator)|request (it|access) from|ask (it|the it desk|the admin\w*|an admin\w*)|route|it desk|service desk|after (the )?(manager|owner|it|security)\b.{0,20}approv|once approved|with (written )?approval)\b",
    ],
    "IGNORE": [
        r"\b(ignor(e|es|ing)|disregard\w*|forget|forgetting|set(ting)? aside|put(ting)? aside|throw(ing)? out|discard\w*|abandon\w*|look(ing)? past|step(ping)? outside|depart(ing)? from|deviat\w*|stop (following|applying)|no longer (follow|apply|obey))\b",
        r"\b(override|overriding|overrides|bend|bending|break|breaking|circumvent\w*|get around|work around|waive|waiving|suspend|suspending) (the |all |any |every |your |our |these |those |its |previous |prior |earlier |company |standard |usual )+",
        r"\b(work|get|go|route|step|find a way) around (it|them|that|this|those)\b",
    ],
    "NOT_BINDING": [
        r"\b(no longer|don'?t|do not|does not|doesn'?t|not|never|won'?t) (bind|binds|apply|applies|count|counts|matter|matters|hold|holds|restrict|restricts|limit|limits|concern)\b",
        r"\b(optional|non[- ]binding|not binding|suggestions?|guidance only|advisory(?! (board|committee|council|group|panel))|a formality|flexible|negotiable|outdated|obsolete|void|suspended|lifted|off the table)\b",
        r"\b(not|no longer|never) bound by\b|\bfree (of|from)\b|\bexempt\w*\b|\b(make|makes|making|made|grant|allow|give)\w* (an|any) exceptions? (to|from)\b",
        r"\bnone of\b.{0,40}\b(apply|applies|matter|matters|count|counts|bind|binds|hold)\b",
    ],
    "RULES": [
        r"\b(instructions?|rules?|polic(y|ies)|guidelines?|guidance|directives?|restrictions?|regulations?|system prompt|playbook|runbook|standard operating procedures?|sops?|code of conduct|terms of service|what you were (told|instructed)|(refund|spending|transaction|credit|approval|discount) limits?|compliance requirements?)\b",
    ],
    "OBEY_ANYONE": [
        r"\b(customer|user|caller|requester)('s)?( own)? (word|wording|request|demand|instruction)s? (as|is) (the )?(final|only|new|last|highest) (rule|word|authority|say|instruction)\b",
        r"\bdo (whatever|anything|everything|all|exactly what) (they|he|she|the customer|the user|the caller|the requester|you are told|you're told|is asked)\b",
        r"\b(whatever|anything) (the )?(customer|caller|user|requester)s? (asks?|wants?|says?|demands?|requests?)\b.{0,30}\b(do|grant|give|allow|approve)\b",
        r"\b(comply|go along) with (every|any|all) (request|demand)s?\b",
        r"\bnever (say|tell (them|the customer)) no\b",
    ],
    "DESTROY": [
        r"\b(delet\w*|wip(e|es|ing)|wiped|purg\w*|eras\w*|destroy\w*|drop(ping|s)?|truncat\w*|nuk(e|ing)|shred\w*|obliterat\w*|clear(ing)? out|clean(ing)? out|empty(ing)?|overwrit\w*|reformat\w*|format(ting)? (the|all|every)|reset(ting)?|deprovision\w*|terminat\w*|tear(ing)? down|scrub\w*|remov(e|ing)|get rid of|clear(ing)?|flush\w*|rm -rf|force[- ]push\w*|push (--force|-f)(?!-with-lease)|reset --hard)\b",
    ],
    "CRITICAL": [
        r"\b(repository|repo|project) root\b|\broot (directory|folder) of the (repo|repository|project)\b|\bforce[- ]?push\w*|push (-f|--force)\b(?!-with-lease)|\borigin (main|master)\b",
        r"\b(production|prod|live)\b.{0,15}\b(database|db|data|tables?|cluster|servers?|environment|buckets?|records?|instances?|volumes?)\b",
        r"\b(in|on|from) (production|prod)\b",
        r"\b(to|on) (main|master|origin/main|origin/master)\b",
        r"\b(backups?|(database|db|disk|volume|vm|server|backup) snapshots?|replicas?|disaster recovery|restore points?)\b",
        r"\baudit (log|trail|record|history)s?\b|\b(access|security|audit) logs?\b",
        r"\b(entire|whole|full|complete) (database|db|table|bucket|repo|repository|history|dataset|data set|account base|customer base|ledger|directory)\b",
        r"\b(everything|all of it|all the data|all data|all customer data|all user data)\b",
        r"\b(main|master|release) branch\b",
    ],
    "NO_HUMAN": [
        r"\b(in (one|a single) (batch|go|sweep|pass|run|shot)|in bulk|en masse|all at once|in one fell swoop)\b",
        r"\bwithout (asking|checking|confirm\w*|review\w*|consulting|telling|notifying|reading|looking|opening|verifying|double[- ]checking|inspecting|triag\w*|warning|notice|a (human|person|second look|backup|review|confirmation)|anyone|anybody|any(one)? (approval|review|confirmation|human|person)|approval|a ticket|human|people)\b",
        r"\b(no|zero|with no|without any) (human|person|people|one|review|confirmation|questions asked|sign[- ]?off|backup)s?\b",
        r"\b(automatically|auto-|silently|quietly|unattended|unsupervised|behind the scenes|secretly|covertly|nobody (needs to|has to) (know|check|confirm))",
        r"\bhumans? out of the loop\b|\bnot? (in|involving) (a|any) (human|person)\b",
    ],
    "EVERY": [
        r"\b(all|every|each|any|entire|whole|bulk|in bulk|en masse|mass|wholesale)\b",
    ],
    "RECORDS": [
        r"\b(accounts?|users?|customers?|records?|profiles?|orders?|tickets?|messages?|emails?|conversations?|histor(y|ies)|data|files|documents|repositor(y|ies)|projects?|invoices?|contacts?|subscriptions?|members?|rows)\b",
    ],
    "DISPOSABLE": [
        r"\b(temp|temporary|tmp|draft|drafts|cache|caches|cached|build|artifacts?|scratch|test (data|database|db|files?|fixtures?)|fixtures?|stale locks?|expired (sessions?|tokens?)|spam|duplicates?|\.pyc|__pycache__|node_modules|dist|logs? older than|after (a |the )?(human|person|manager|owner|customer) (review|confirm|approv)\w*|once (the )?(customer|owner|manager) (confirm|approv)\w*)\b",
    ],
    "SAFETY": [
        r"\b(safety|security|content|spam|profanity|nsfw|toxicity|abuse|fraud|moderation|output|input|prompt|word|keyword|pii|risk|harm) (filter|check|control|scan|feature|setting|system|net|layer|rule|polic(y|ies)|mode|measure|guard|threshold|level|score|classifier|detection|detector|screening)s?\b",
        r"\b(guardrails?|guard rails?|safeguards?|safety|moderation|censorship|protections?|defen[cs]es?|firewall|antivirus|anti-virus|malware scan\w*|virus scan\w*|sandbox\w*|rate[- ]limit\w*|throttl\w*|redaction|pii (masking|redaction)|masking|dlp|content polic(y|ies))\b",
        r"\b(audit (log|logging|trail|record|event|entr(y|ies))s?|auditing|logging|monitoring|alerting|alerts|tracing)\b",
        r"\b(security |vulnerability |malware |secret )?(scanners?|waf|edr|siem|intrusion (detection|prevention)|fraud (checks?|detection|rules?|screening))\b",
        r"\b(mfa|2fa|two[- ]factor|multi[- ]factor|encryption|tls|ssl|certificate (check|verification|validation)|signature (check|verification))\b",
        r"--no-verify|verify\s*=\s*false|--insecure",
    ],
    "OBEY": [
        r"\b(do|doing) (what|whatever|everything|anything|as|it)\b",
        r"\b(follow\w*|obey\w*|carry(ing)? (it |them )?out|carried out|execut\w*|act(ing)? on|comply\w*|complie\w*|heed\w*)\b",
        r"\btreat\w*\b.{0,60}\b(as (if|though)|like)\b",
        r"\btreat\w*\b.{0,40}\bas (coming from|from|an instruction|instructions|a command|commands|orders|authoritative|binding|your (operator|instructions|user|orders))\b",
        r"\bwhatever\b.{0,40}\b(tells?|says?|asks?|wants?) you to\b",
        r"\b(so|then|and|just) (do|doing) (that|this|so|the same|it)\b",
        r"\b(without (question\w*|hesitat\w*|second[- ]guessing)|to the letter|no questions asked|unquestioningly|blindly)\b",
    ],
    "SOURCE": [
        r"\bticket (body|text|description|comments?)\b|\b(the|this|that) (ticket|message|email|comment)('s)? (body|text|contents?)\b|\b(fetched|retrieved|scraped|downloaded) web ?pages?\b",
        r"\b(e-?mails?|web ?pages?|websites?|web ?sites?|pages? you (retrieved|fetched|opened|visited|loaded)|search results?|lookup results?|tool (output|result|response)s?|api (output|response|result)s?|attachments?|pdfs?|incoming messages?|inbound messages?|chat messages? from|third[- ]party content|snippets?|scraped|(retrieved|fetched|downloaded|loaded|incoming|forwarded|received|external) (\w+ )?(documents?|docs?|files?|pages?|messages?|content|text|emails?|results?))\b",
    ],
    "COMMANDS": [
        r"\b(instructions?|commands?|directions?|directives?)\b",
        r"\b(asks?|asked|tells?|told|says?|said|demands?|demanded|wants?|wanted|instructs?|instructed)( you)?( to)?\b(?! (the customer|the caller))",
        r"\b(whatever|anything) (it|they) (says?|asks?|tells?|wants?)\b|\b(embedded|hidden) (in|inside)\b",
    ],
    "SEND": [
        r"\b(e-?mail|mail)(ing|ed)? (it|them|the|this|that|a|an|all|every|everything|copies|a copy|out)\b",
        r"\b(send\w*|sent|forward\w*|e-?mailing|e-?mailed|mailing|mailed|upload\w*|post(ing|ed)?|push(ing|ed)?|copy(ing)?|copied|export\w*|share|shares|sharing|shared|sync\w*|transfer\w*|transmit\w*|leak\w*|paste|pasting|pasted|submit\w*|bcc|cc|dump\w*|exfiltrat\w*|relay\w*|mirror\w*|publish\w*|beam|pipe|stream\w*|back(ing)? up to|attach\w*|curl|wget|scp|rsync|sftp|netcat|nc)\b",
    ],
    "DATA": [
        r"\b[\w-]*(customers?|users?|clients?|accounts?|orders?|contacts?|employees?|patients?|members?|payroll|export|dump|backup|crm|leads)[\w-]*\.(csv|sql|json|xlsx?|db|sqlite3?|gz|zip|tar|dump|bak|jsonl|parquet)\b",
        r"\b(customers?|users?|clients?|members?|employees?|patients?|subscribers?|accounts?)('s?)? (data|list|lists|table|tables|records?|details|database|db|emails?|addresses|contacts?|files?|profiles?|pii|information|info|export|dump|history|histories|card numbers?)\b",
        r"\b(card|payment|bank|account|personal|contact|billing|login|shipping|home) (details|data|info|information|numbers?|addresses)\b",
        r"\b(phone numbers|email addresses|e-mail addresses|home addresses|dates of birth|salaries|payroll|invoices)\b",
        r"\b(all|every|each|entire|whole|full|complete)\b( [\w'-]+){0,2} (records?|conversations?|tickets?|messages?|e-?mails?|orders?|files?|contacts?|customers?|users?|accounts?|data|histor(y|ies)|logs?|transcripts?|chats?|threads?|repl(y|ies))\b",
        r"\b(personal data|pii|personally identifiable|card numbers?|credit cards?|payment (details|data|info\w*)|bank details|ssns?|social security|passports?|medical records?|contact lists?|address book|mailing list|crm|full (export|dump|table|list|database|backup)|database (dump|export|backup)|db dump|records|the (whole|entire|full|complete) (database|table|list|dataset)|all (records|data|tickets|conversations|messages|emails|orders|files|contacts)|every (record|ticket|conversation|message|email|order|file|contact|reply|chat)|chat (logs?|transcripts?)|transcripts?|conversation (logs?|history)|order history|source code|the repository|the codebase|dataset|data set)\b",
    ],
    "OUTSIDE": [
        r"\bgoogle (docs?|sheets?|slides|forms?)\b|\b(my|a|his|her|their) (friend|cousin|brother|sister|buddy|mate|contact)s?\b|\b(competitors?|recruiters?|journalists?|reporters?|the press|another (company|firm|vendor))\b",
        r"\b(external|outside|third[- ]party|offsite|off-site|public|unknown|private|anonymous)\b",
        r"\b(my|your|a|an|their own) (personal|private|own|home|gmail|yahoo|hotmail|proton\w*) (e-?mail|address|account|inbox|drive|folder|server|bucket|phone)\b",
        r"\b(gmail|yahoo|hotmail|protonmail|pastebin|dropbox|mega\.nz|transfer\.sh|webhook\w*|ngrok|requestbin|ftp|sftp|s3 bucket|google drive|telegram|discord|whatsapp)\b",
        r"https?://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b[\w-]+(\.[\w-]+)*\.(com|net|org|io|ru|cn|xyz|info|biz|me|co|app|dev|site|online|top)\b",
        r"\b(this|that|the following|any|another) (address|url|endpoint|link|server|inbox)\b",
    ],
    "REVEAL": [
        r"\bread\w*\b.{0,50}\bback to\b",
        r"\b(put|place|insert|embed|hard-?cod\w*|commit\w*)\b(?=.{0,60}\b(public|readme|wiki|ticket|channel|chat|comment|issue|pull request|description|repo|repository|source|log|reply|response|forum|status update|screenshot)\b)",
        r"\b(reply|respond|answer|come back) with\b|\bquot(e|ing)\b",
        r"\b(reveal\w*|print\w*|show(s|ing|n)?|display\w*|echo\w*|output\w*|paste|pasting|pasted|shar(e|es|ing)|shared|tell(ing)?|told|disclos\w*|expos(e|es|ing)|dump\w*|list (out|all|every)|read(ing)? (out|aloud)|read\w* .{0,30}(out loud|aloud)|recit\w*|repeat\w*|includ(e|es|ing)|send\w*|sent|post(ing|ed)?|leak\w*|writ(e|es|ing) (out|down)|spell\w* out|hand(ing)? over|give|gives|giving|copy(ing)?|cat|type (out)?)\b",
    ],
    "SECRET": [
        r"\bid_(rsa|ed25519|ecdsa|dsa)\b|\.pem\b|~?/?\.ssh/|\.aws/credentials|\.netrc\b|\.pgpass\b|/etc/shadow\b|\bkubeconfig\b|\.kube/config\b|\bkeystore\b",
        r"\b(openai|aws|stripe|github|slack|gcp|azure|twilio|sendgrid|paypal)( (live|test|secret|api|prod|production|admin|root))+ (keys?|tokens?|secrets?)\b",
        r"\.env\b|\b\w*_(api_key|secret|secret_key|password|passwd|pwd|access_key|private_key)\b|\b(openai|aws|stripe|github|slack|gcp|azure)[\w-]*(key|token|secret)\b",
        r"\b(api|access|auth|bearer|refresh|session|secret|signing|master|private|encryption|deploy|personal access|service account)[- _]?(keys?|tokens?|secrets?|cookies?|credentials?)\b",
        r"\b(passwords?|passphrases?|passwd|credentials?|creds|secrets?|private keys?|ssh keys?|pgp keys?|seed phrases?|mnemonic|connection strings?|env(ironment)? var(iable)?s?|\.env|secret_key|aws_\w+|client secret)\b",
        r"\b(system|hidden|initial|original|internal) (prompt|instructions?|message|rules|configuration)\b",
        r"\byour (instructions|prompt|configuration|hidden rules|rules verbatim)\b",
    ],
    "SECRET_CARE": [
        r"--[\w-]+-env\b",
        r"\b(authorization|bearer|header|(shown|displayed|printed) once|never (stored|logged|printed|shown)|stored in|store (it|them) in)\b",
        r"\b(mask\w*|redact\w*|rotat\w*|revok\w*|vault|secret (manager|store)|last (four|4)|asterisks|\*{3,}|placeholder|password reset|reset (the |their |your )?password|reset link|password (field|form|policy|strength|rules|requirements|manager)|hash\w*|whether|if (the |a |an |any )?(key|token|password|secret)|make sure no|check that no|scan\w* for|leaked|expired)\b",
    ],
    # The single-concept shapes (policy_concepts/__init__.py): the wording is the whole attack.
    "APPROVAL_FAKED": [
        # a payment split to stay under the threshold that needs an approval
        r"\b(split|splits|splitting|break|breaking|divid\w*|chunk\w*|spread\w*)\b.{0,60}\b(under|below|beneath|just short of|within)\b( [\w'-]+){0,2} (the )?(approval |review |sign[- ]?off )?(threshold|limit|cap|ceiling)\b",
        # an old or someone else's approval reused
        r"\b(reus\w*|re-us\w*|recycl\w*|borrow\w*|copy\w*|paste\w*)\b.{0,30}\b(approval|sign[- ]?off|authori[sz]ation)s?( (id|number|code|reference|ticket|token|email))?\b.{0,30}\b(from|of) (an? )?(old|older|earlier|previous|prior|last|another|other|someone)",
        # something that is not an approval declared to be one
        r"\b(treat|consider|count|take|regard|deem)\w*\b.{0,50}\bas (sufficient |enough |adequate |valid |implicit |implied |tacit |an? )?(approval|authori[sz]ation|sign[- ]?off|go[- ]ahead|green light)\b",
        r"\b(silence|no (answer|reply|response|objection)|not objecting)\b.{0,20}\b(means|counts as|is|equals) (an? )?(approval|yes|consent|sign[- ]?off|go[- ]ahead)\b",
        r"\b(already|effectively|implicitly|tacitly|verbally) (pre-?)?(approved|agreed|signed off|authori[sz]ed|ok'?d|okayed)\b(?!.{0,30}\b(in writing|on the ticket|recorded|in the approval)\b)",
        # the status set to approved before anyone approved
        r"\b(set|change|switch|move|flip|mark|update)\w*( [\w'-]+){0,3} (status|state|flag|field|stage)( [\w'-]+){0,3} (to|as) ['\"‘“]?(approved|signed off|authori[sz]ed|accepted)\b(?!.{0,40}\b(only|once|after|when)\b)",
    ],
    "WIDEN_SCOPE": [
        # shared with everyone
        r"\b(share|shares|sharing|shared|open|opens|opening|expose\w*|grant\w*|give|giving)\b( [\w'-]+){0,5} (folders?|drives?|buckets?|repo(sitor(y|ies))?s?|databases?|db|director(y|ies)|shares?|storage|containers?|dashboards?|accounts?|projects?|workspaces?|files|documents|spreadsheets?|vaults?|records|data)\b.{0,40}\b(with|to) (everyone|everybody|all users|all staff|the whole (company|organi[sz]ation|org|team)|everyone in the (company|organi[sz]ation|org)|anyone|the public|all employees|the internet|the world)\b",
        r"\b(make|making|made|set|setting|mark|turn|switch|flip|change)\w*\b( [\w'-]+){0,4} (folders?|drives?|buckets?|repo(sitor(y|ies))?s?|databases?|storage|containers?|blobs?|dashboards?|shares?|files|documents|spreadsheets?|projects?|reports?)\b.{0,20}\b(public(ly)?|world[- ]?(readable|writable)|anyone with the link)\b",
        r"\b(public(ly)?[- ](readable|writable|writeable|accessible)|world[- ](readable|writable|writeable)|anyone with the link can (edit|view|access))\b",
        # access or credentials that never expire
        r"\b(tokens?|keys?|passwords?|credentials?|sessions?|access|accounts?|certificates?|invites?|links?|logins?)\b.{0,40}\b(no|without( an?)?|never|infinite|unlimited|disabl\w*|remov\w*|turn(ing)? off|skip\w*) (the |any )?(expiry|expiration|expiry date|expiration date|ttl)\b",
        r"\b(no|without( an?)?|infinite|unlimited) (expiry|expiration|expiry date|expiration date|ttl)\b.{0,30}\b(tokens?|keys?|passwords?|credentials?|sessions?|access|certificates?|links?)\b",
        r"\b(never[- ]expir\w*|non[- ]expiring|(does|do|will|should|must) not expire|never expires?|permanent (access|token|credentials?|admin|key))\b",
        # permissions opened on files
        r"\bchmod\s+(-\w+\s+)*(0?777|0?666|a\+rwx|ugo\+rwx|o\+w|a\+w)\b",
        # limits raised beyond what the policy allows
        r"\b(rais|increas|bump|lift|extend|doubl|tripl)\w*\b.{0,40}\b(limit|cap|quota|allowance|ceiling)s?\b.{0,30}\b(beyond|above|over|past|exceed\w*) (the |their |its |your |what )?(policy|cap|maximum|max|ceiling|threshold|allowed|permitted|limit)\b",
        r"\b(rais|increas|bump|lift|extend|doubl)\w*\b.{0,40}\b(credit|spending|refund|transaction|withdrawal|payout|discount|account|purchase) (limit|cap|ceiling|allowance)s?\b.{0,40}\bwithout\b",
        # admin by command
        r"\busermod\s+(-\w+\s+)*-a?G\s*\w*(sudo|wheel|admin|root|docker)\b|\b(gpasswd|adduser)\s+(-a\s+)?\S+\s+(sudo|wheel|admin|root)\b|\bgrant all( privileges)?\b|\bnopasswd\b|\bsudoers\b",
    ],
    "SAFETY_OFF": [
        r"--no-verify\b|\bverify\s*=\s*false\b|--insecure\b|\bcurl\s+(-\w+\s+)*-k\b|\bstrict_?host_?key_?checking\s*=?\s*no\b|\bsetenforce\s+0\b|\bufw\s+disable\b|\biptables\s+-f\b",
        r"\bsystemctl\s+(stop|disable|mask)\s+(firewalld|ufw|auditd|apparmor|fail2ban|clamav\w*|falcon\w*|selinux|crowdstrike\w*|osquery\w*)\b",
        r"\b(git_ssl_no_verify|node_tls_reject_unauthorized\s*=\s*0|pythonhttpsverify\s*=\s*0|ssl_verify\w*\s*[=:]\s*(false|0|none|no))\b|--disable-(web-)?security\b|--skip-(ssl|tls|security|verification|verify)\b",
        r"(?<![\w.])([\w.]*_)?(pii_redaction|redaction|moderation|content_filter|safety_filter|spam_filter|profanity_filter|audit|audit_log|audit_logging|mfa|2fa|safety|safety_checks?|guardrails?|csrf_protection|verify_ssl|ssl_verify|verify_tls|fraud_checks?|fraud_detection|virus_scan|antivirus|firewall|rate_limit(ing)?)(_enabled|_on|_active|_check|_required)?\s*[=:]\s*(false|0|off|no|disabled?|none)\b",
        r"\b(mark|flag|set|tag|label)\w*( [\w'-]+){0,2} (failing|failed|broken|red|security|safety|flaky)( [\w'-]+){0,2} (tests?|checks?|scans?|specs?) as (skipped|skip|xfail|expected to fail|passing|passed|green|optional|ignored)\b",
        r"\b(comment(ing)? out|delet\w*|remov\w*|disabl\w*) (the )?(failing|failed|security|safety)( [\w'-]+){0,2} (tests?|checks?|scans?|assertions?)\b.{0,40}\b(ship|release|merge|deploy|pass|green)\w*\b",
    ],
    "WIPE_COMMAND": [
        r"\bfind\s+(/|~|\$home|/home|/var|/etc|/usr)(\s[^|;\n]*)?\s-delete\b|\bfind\s+(/|~|\$home)\s[^;\n]*-exec\s+rm\b",
        r"\brm\s+-\w*[rf]\w*\s+(-\w+\s+)*(/\*?|~/?\*?|\.\.?/?\*?|\$home/?|/(home|etc|var|usr|opt|srv|data|mnt)/?\*?)(\s|$|;|&)",
        r"\b(run|execute|issue|exec|psql|mysql|sqlite3)\b.{0,60}\b(delete\s+from\s+[\w.\"`]+\s*(;|$|'|\")|truncate\s+(table\s+)?[\w.\"`]+\s*(;|$|'|\")|drop\s+(schema|database)\b)",
        r"\bterraform\s+destroy\b|\bkubectl\s+delete\s+(ns|namespaces?|--all|all\b)|\baws\s+s3\s+(rm\s+\S+\s+--recursive|rb\s+\S+\s+--force)\b|\bredis-cli\s+(-\S+\s+)*flushall\b|\bflushall\b|\bdropdb\b|\bmkfs(\.\w+)?\s+/dev/|\bdd\s+if=/dev/(zero|urandom)\s+of=/dev/",
        r"\bgit\s+push\s+(\S+\s+)?(--delete\s+|:)(main|master|release)\b|\bgit\s+branch\s+-d\s+(main|master)\b|\bgh\s+repo\s+delete\b|\b-auto-approve\b.{0,30}\b(destroy|prod\w*)\b",
    ],
    "ADDRESSED_TO_AGENT": [
        r"\b((note|message|notice|instructions?|reminder|memo|warning) (to|for)|attention|hey|dear|important)( any| all| the| every)? (ai|llms?|language models?|ai assistants?|assistants?|agents?|chatbots?|bots?|gpts?)\b( [\w'-]+){0,2} ?(reading|processing|parsing|summari[sz]ing|viewing|crawling|analy[sz]ing|seeing|handling|from|:)",
        r"\bif you are (an? )?(ai|llm|large language model|language model|ai assistant|assistant|agent|bot|chatbot|automated (system|agent|assistant))\b( [\w'-]+){0,3}( reading| processing|,|:)",
        r"\b(ai|llm|language model|assistant|agent|bot)s? (reading|processing|parsing|summari[sz]ing|viewing|crawling|analy[sz]ing) (this|these)\b",
        r"\b(assistant|agent|ai|system)\s*:\s*(quietly|silently|secretly|also|now|from now on|new (task|instructions?)|please (also|now)|before (you )?(answer|repl|respond)\w*)",
        r"\battention,? (ai|agent|assistant|llm|model|bot)\b|(<!|^|\s)--\s*(assistant|agent|ai|system|llm|model)\s*:|\[(hidden |secret )?(note|instructions?|message) (to|for) (the )?(ai|assistant|agent|model)\]",
        r"\bsystem (notice|message|override|alert|instruction|directive)s?\b.{0,40}\b(the )?(agent|assistant|ai|model)\b",
        r"\b(not|never|don'?t|do not|without) (mention|reveal|disclos|tell|show)\w* (this|these|that) (message|note|instructions?|notice|text|comment)\b",
        r"\b(new|updated|additional|special|hidden|secret|override) (instructions?|commands?|orders|directives?) (for|to) (the |any |all )?(ai|assistant|agent|llm|model|bot)s?\b",
    ],
    "EXFIL_COMMAND": [
        r"\b(curl|wget|http|httpie)\b[^\n|;]{0,120}\s(-d|--data\S*|-f|--form|-t|--upload-file|--post-file|--post-data|--body-file)\b[^\n|;]{0,160}https?://(?!localhost|127\.|0\.0\.0\.0|\[::1\])",
        r"\b(curl|wget)\b[^\n|;]{0,40}https?://(?!localhost|127\.|0\.0\.0\.0|\[::1\])\S+[^\n|;]{0,80}\s(-d|--data\S*|-f|--form|-t|--upload-file|--post-file)\s*@",
        r"\|\s*(curl|nc|ncat|netcat|wget)\b(?![^\n|;]*\b(localhost|127\.0\.0\.1)\b)|\b(nc|ncat|netcat)\s+\S+\s+\d+\s*<",
        r"\b(scp|rsync|sftp)\b[^\n|;]{0,100}\b[\w.-]*(dump|backup|export|\.sql|\.csv|customers?|users?|\.env|id_rsa|db)\b[^\n|;]{0,100}\s[\w.-]+@[\w.-]+:",
    ],
    "SECRET_DUMP": [
        r"\bprintenv\b(?!\s+(?!and\b|then\b|to\b|into\b|in\b|&&)[a-z_][a-z0-9_]*)|\benv\s*(\||>)|\bexport\s+-p\b|\bdeclare\s+-x\b|\bset\s*\|",
        r"\bcat\b[^|;&\n]{0,40}(\.env\b|id_(rsa|ed25519|ecdsa)\b|\.pem\b|\.aws/credentials|\.netrc\b|\.pgpass\b|/etc/shadow\b|credentials\.(yml|yaml|json)\b|secrets?\.(yml|yaml|json|txt|env)\b|\.kube/config\b)",
        r"\bgit\s+add\b[^;&\n]{0,60}(\.env\b|credentials|secrets?\.|id_(rsa|ed25519)|\.pem\b|\.key\b|\.p12\b|\.pfx\b)",
        r"\b(read|tell|give|repeat|forward|relay|pass|say|spell)\w*( [\w'-]+){0,3} (the |that |this )?(one[- ]time |otp |verification |security |sms |2fa |mfa |login |reset )(code|password|passcode|pin)s?\b( [\w'-]+){0,3} (that |which |we |you |the system )?(just )?(was |were |had |have )?(sent|texted|emailed|delivered|generated)\b",
        r"\b(codes?|otp|passcode|pin)\b.{0,40}\bback to (the )?(caller|person|requester|them|him|her)\b",
    ],
}

# Negation before the anchor (in its comma-delimited part): "do not", "never", "must not" ...
NEGATION_BEFORE = r"\b(do not|don'?t|never|must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|may not|won'?t|not|no one may|avoid|refuse to|under no circumstances|unable to|not able to|not allowed to|not permitted to)\b"
NEGATION_AFTER = ""
# a sentence that opens with one of these forbids everything it lists
NEGATION_CLAUSE = r"^(never|under no circumstances|at no time|do not ever|don'?t ever)\b"
