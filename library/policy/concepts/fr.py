"""French concepts of the policy screen's meaning layer (library/policy/concepts/__init__.py).
Accents are optional in the stems ([ée]), since people type without them."""

from .commands import COMMANDS, merge

SPAN = 100

# A gap inside one clause with no negation in it: a verb and its object are one action only when
# nothing between them negates it ("Ne lis jamais un code de confirmation ...").
_NOT = r"(?:ne|n'|pas|jamais|aucun\w*)"


def _gap(most: int, also: str = "") -> str:
    stop = f"{_NOT}|{also}" if also else _NOT
    return rf"(?:(?!\b(?:{stop})\b).){{0,{most}}}"


# a negation right before a target noun: "des informations générales, aucune donnée client"
_NO = r"(?<!aucune )(?<!aucun )(?<!jamais de )(?<!pas de )(?<!ni )"
# the safeguards whose switching off is the attack (SAFETY below, and SAFETY_OFF's shapes)
_SAFEGUARD = (
    r"(antifraude|anti-fraude|anti-?spam|(?<!quipe )(?<!quipe de )(?<!quipe de la )(?<!service )s[ée]curit[ée]|filtre\w*|mod[ée]ration"
    r"|censure|garde-fous?|protections?|pare-feu|antivirus|bac à sable|sandbox|limites? de d[ée]bit|limitation\w* de d[ée]bit|bridage"
    r"|masquage|caviardage|journalisation|surveillance|supervision|alertes?|audit\w*|chiffrement|double authentification|2fa|mfa"
    r"|d[ée]tection\w*|scanner\w*)"
)

CONCEPTS = {
    "REPORT": [
        r"\b(signal\w*|remont\w* (à|au))\b",
    ],
    "MASS_ACTION": [
        r"\b(bloqu\w*|gel\w*|annul\w*|rembours\w*|ferm\w*|suspend\w*|d[ée]sactiv\w*|supprim\w*)",
    ],
    "OBSTACLE": [
        r"\b(prend|prennent) trop de temps\b|\b(ralentit|ralentissent|fait perdre du temps|perte de temps|paperasse|bureaucrati\w*|une formalit[ée])\b",
    ],
    "MARK_VERIFIED": [
        # a box ticked: "Coche la case « identité contrôlée »" (not "que lorsque le code correspond")
        r"\b(coch\w*|mets|marque\w*|indique\w*|passe|s[ée]lectionn\w*|clique\w*)\b"
        + _gap(40, "que|seulement|uniquement")
        + r"[«\"“']\s?(identit[ée] |client |appelant )?(contr[ôo]l[ée]e?|v[ée]rifi[ée]e?|confirm[ée]e?|authentifi[ée]e?)\s?[»\"”'](?!.{0,40}\b(que lorsque|qu'apr[èe]s|une fois|seulement|uniquement)\b)",
        r"\b(consid[èée]r\w*|trait\w*|marqu\w*|tien\w*)\b.{0,40}\b(comme|pour) (v[ée]rifi[ée]e?s?|confirm[ée]e?s?|authentifi[ée]e?s?|valid[ée]e?s?)\b",
    ],
    "IMPERSONATE": [
        r"\bsous le nom (du|de la|de ton|de ta|d'un|d'une) \w*\s?(chef|responsable|manager|directeur|directrice|superviseur|sup[ée]rieur)\w*",
        r"\b(te faisant passer|fais-toi passer|faites-vous passer|se faire passer|en te pr[ée]sentant|pr[ée]sente-toi|sign\w*|r[ée]ponds?|[ée]cris)\b.{0,30}(\b(pour|comme|en tant que|au nom d[eu])\b|[«\"“])[^«»]{0,25}\b(responsable|directeur|directrice|direction|pr[ée]sident\w*|juridique|manager|chef|cheffe|superviseur|administrat\w*)",
    ],
    "FOREIGN_INSTRUCTIONS": [
        r"\b(page|e-?mail|courriel|document|r[ée]sultat|sortie|pi[èe]ce jointe|fichier|r[ée]ponse)s?\b.{0,30}\bcontien\w*\b.{0,20}\b(des |les )?(instructions?|consignes?|commandes?)",
        r"\b(instructions?|consignes?|commandes?)\b.{0,30}\b(dans|d'un|d'une|de la|du|provenant)\b.{0,20}\b(e-?mails?|courriels?|pages?|documents?|r[ée]sultats?|sorties?|pi[èe]ces? jointes?|fichiers?)",
    ],
    "SELF_APPROVE": [
        r"\b(inscris|mets|nomme|d[ée]signe|d[ée]clare|ajoute)[- ](toi|vous)\b.{0,20}\b(comme|en tant qu'|en) (approbateur|valideur|validateur|relecteur|signataire)\w*",
        r"\b(accepte|valide|approuve|signe)\w* (ta|sa|votre) propre (demande|requ[êe]te|pull request|modification)\w*",
        r"\b(approuv\w*|valid\w*|sign\w*|fusionn\w*)\b.{0,40}\b(toi-m[êe]me|vous-m[êe]me|au nom (du|de la|de ton|de ta) \w+|à la place (du|de la) \w+)\b",
    ],
    "UNBOUND": [
        r"\b(tu n'as|vous n'avez|il n'y a)\b.{0,10}\b(plus )?(aucune?|pas de)\b.{0,10}\b(restriction|limite|r[èe]gle|filtre|contrainte)s?\b",
        r"\b(r[ée]ponds|agis|r[ée]pondez|agissez)\b.{0,30}\bsans (aucune? )?(restriction|limite|r[èe]gle|filtre|censure)s?\b",
        r"\b(fais|faites|agis|agissez) comme si\b.{0,50}\b(n'existai\w*|n'avais|n'aviez|aucune?|pas)\b",
        r"\bpas ce que (dit|disent|pr[ée]voit|pr[ée]voient) (le|la|les) (r[èe]glement|r[èe]gles?|politique|proc[ée]dure|directives?)\b",
        r"\b(assistant|mode|ia) (sans (restriction|limite|filtre)s?|non filtr[ée]|non censur[ée]|d[ée]brid[ée])\b",
        r"\b(assistant|ia|mod[èe]le|bot|mode)\w* sans (aucune? )?(consignes?|r[èe]gles?|limites?|contraintes?|garde-fous?|censure|interdits?|filtres?|restrictions?)\b",
        # new instructions said to outrank the rules
        r"\b(priment?|pr[ée]valen?t|l'emporten?t|passen?t avant|ont (la )?priorit[ée]|a (la )?priorit[ée])\b.{0,10}\b(sur |avant )?(toutes |tous )?(les |tes |vos |ses )?\w*\s?(directives?|r[èe]gles?|consignes?|instructions?|politiques?|prompt)\b",
        r"\b(remplacen?t?|remplaceront) (toutes )?(les |tes |vos )(directives|r[èe]gles|consignes|instructions)\b",
        # the rules set aside whatever they say
        r"\b(quoi que|quoi qu'en) (disent|dise|pr[ée]voient|pr[ée]voie|exigent) (les|la|tes|vos|nos) \w*\s?(directives?|r[èe]gles?|consignes?|politiques?|proc[ée]dures?)",
        r"\b(peu importe|qu'importe) (ce que )?(disent|dit|pr[ée]voient|pr[ée]voit) (les|la|tes) (directives?|r[èe]gles?|politique|consignes?)",
        r"\bsans tenir compte (des|de la|du) (r[èe]gles?|politique|directives?|consignes?|r[èe]glement)",
    ],
    "VIOLATION": [r"\b(contraire\w* à|qui enfreign\w*|qui viol\w*|violation\w*|infraction\w*)\b"],
    "SKIP": [
        r"\b(inutile|pas besoin) de (la |le |les )?faire (relire|valider|approuver|v[ée]rifier)\b",
        r"\bavant que (quelqu'un|qui que ce soit|la compta\w*|le service juridique|le responsable|le relecteur|la conformit[ée])\b.{0,30}\b(regarde|voie|v[ée]rifie|remarque|s'en aper[çc]oive)\b",
        r"\b(saut\w*|sauter|contourn\w*|ignor\w*|évit\w*|evit\w*|omet\w*|omis|oubli\w*|zapp\w*|pass\w* (outre|par-dessus|au-dessus)|outrepass\w*|dispens\w*|fais l'impasse|faire l'impasse|court-circuit\w*|se passer d(e|u|es)|passe-toi d(e|u|es)|passez-vous d(e|u|es)|laisse\w* tomber|pass(e|ez|er) la)\b",
        r"\bau lieu d'attendre\b|\bplutôt que d'attendre\b",
        r"\b(inutile|pas besoin|pas la peine|nul besoin|aucun besoin|pas nécessaire|pas necessaire|superflu\w*|facultati\w*|optionnel\w*|une formalité|pas obligatoire|aucune raison)\b",
        r"\bn'attend(s|ez)? pas\b|\bne pas attendre\b|\bn'attends? plus\b",
        r"\bne (lui |leur |la |le |les |l')?(demande|v[ée]rifie|contr[ôo]le|exige|r[ée]clame)\w* (rien|pas|plus|jamais)\b|\bn'(exige|\w*v[ée]rifie)\w* (rien|pas|plus|jamais)\b",
        r"\bne (pose|posons|posez|posent)\w* pas\b|\b(n'est pas pr[ée]vu|ne sont pas pr[ée]vues?|pas obligatoire)\w*",
        r"\b(plus besoin|plus la peine|plus n[ée]cessaire|n'est plus (n[ée]cessaire|obligatoire|requis\w*))\b",
    ],
    "WITHOUT": [r"\bsans\b"],
    "DEFER": [
        r"\bapr[èe]s (le|la|l') ?(virement|paiement|versement|remboursement|d[ée]ploiement|mise en production|ex[ée]cution)\b",
        r"\br[ée]gularis\w*|\b\w+(ra|rons|ront)\b.{0,40}\b(lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|le mois prochain)\b",
        r"\b\w+(ra|rons|ront)\b.{0,30}\b(plus tard|apr[èe]s coup|ensuite|la semaine prochaine|demain)\b",
        r"\b(pourra|pourront|peut|peuvent|viendra|suivra|se fera|sera)\b.{0,30}\b(après|plus tard|ensuite|apr[èe]s coup|la semaine prochaine|demain|r[ée]troactivement|a posteriori)\b",
        r"\b(valider|approuver|signer|autoriser|ratifier|entériner|enteriner)(a|ont)\w*\b.{0,25}\b(plus tard|la semaine prochaine|demain|apr[èe]s coup|ensuite|apr[èe]s)\b",
        r"\b(apr[èe]s coup|a posteriori|r[ée]troactivement|pour la forme|tamponn\w*|valider? (ça|cela) plus tard|régularis\w* (plus tard|ensuite|après))\b",
    ],
    "APPROVAL": [
        r"\b(relire|relu|relue|faire relire)\b",
        r"\b(relect\w*|r[ée]viseu\w*|relecture)\b",
        r"\b(approb\w*|approuv\w*|validation\w*|valid\w*|autoris\w*|accord\w*|aval|feu vert|visa|consentement|signature\w*|signataire\w*|sign(e|es|ent|ez|er|é|ée|és|ées)|bon pour accord|relecture|revue|comit[ée]|double contr[ôo]le|quatre yeux|dit oui|cab)\b",
        r"\b(manager|responsable|superviseur|supérieur\w*|superieur\w*|chef\w*|direction|comptabilit[ée]|finance\w*|conformit[ée]|hi[ée]rarchi\w*|n\+1)\b",
    ],
    "APPROVAL_GATE": [
        r"\b([ée]tape|processus|circuit|exigence|obligation|workflow|r[èe]gle) d'(approbation|validation|autorisation)\b",
    ],
    "DISABLE": [
        r"\b(mets|mettez|mettre)\b.{0,40}\ben pause\b|\bmets? en commentaire\b|\bcomment(e|er|ez)\b",
        r"\b(d[ée]sactiv\w*|coup\w*|[ée]tein\w*|arr[êe]t\w*|suspend\w*|retir\w*|enl[èe]v\w*|supprim\w*|l[èe]v\w*|d[ée]branch\w*|d[ée]sinstall\w*|neutralis\w*|mets? en pause|mettre en pause|bypass\w*)\b",
        r"\b(mets|mettez|mettre|passe|passez|passer)\b.{0,40}\b(hors service|hors ligne|sur off|à z[ée]ro|en veille)\b",
    ],
    "WEAKEN": [
        r"\b(tout )?laisser passer\b|\b(journaliser seulement|seulement journaliser|log-only|mode observation|simple observation)\b",
        r"\b(assoupli\w*|rel[âa]ch\w*|abaiss\w*|baiss\w*|affaibl\w*|r[ée]dui\w*|allège\w*|all[ée]g\w*|adouci\w*|minimis\w*)\b",
        r"\b(mode|niveau|r[ée]glage|profil) (permissif|tol[ée]rant|souple|minimal|le plus bas|l[ée]ger)\b",
        r"\b(permissi\w*|tol[ée]rant\w*|laxiste)\b",
    ],
    "IDENTITY": [
        r"\b(identit[ée]\w*|pi[èe]ce d'identit[ée]|v[ée]rification\w*|v[ée]rifi\w*|authentifi\w*|kyc|code pin|pin|code secret|code à usage unique|code de confirmation|questions? de s[ée]curit[ée]|date de naissance|rappel|double authentification|2fa|mfa|qui (il|elle) (est|pr[ée]tend)"
        r"|procuration\w*|mandat|appel vid[ée]o|visio\w*|codes? (re[çc]us? )?par sms|code sms|sms)\b",
        r"\bcodes?\b(?!-)(?! (promo|de r[ée]duction|postal|de suivi|article|produit|source))",
    ],
    "TRUST_CLAIM": [
        r"\b(crois|croyez|croire|fais confiance|faites confiance|prends|prenez|accepte\w*)\b.{0,30}\b(sur parole|au mot|sa parole|leur parole|ce qu'(il|elle) dit|qui (il|elle) (dit|pr[ée]tend) [êe]tre)\b",
        r"\b(consid[èée]re\w*|trait\w*)\b.{0,50}\bcomme (le |la )?(titulaire|propri[ée]taire|v[ée]rifi[ée])\b",
        r"\bsa parole (suffit|est suffisante)\b",
        r"\b(peuvent|peut) (quand m[êe]me |tout de m[êe]me )?[êe]tre servi\w* s'ils? (connai\w*|donne\w*|indique\w*)",
        # an impression or a known number taken for an identity check
        r"\b(avait|a|semblait|semble|para[îi]t|paraissait)\b.{0,10}\b(l'air )?(sinc[èe]re|honn[êe]te|fiable|de bonne foi|cr[ée]dible|digne de confiance)\b\s*(:|,? (donc|alors))",
        r"\b(quiconque|toute personne qui|celui qui|celle qui)\b.{0,50}\b(est|sera) (r[ée]put[ée]|consid[ée]r[ée]|trait[ée])\w*\b.{0,15}\b(titulaire|propri[ée]taire|client|v[ée]rifi[ée]|identifi[ée])",
        r"\best r[ée]put[ée]e? (être )?(le |la )?(titulaire|propri[ée]taire)\b",
        # a weak proof taken for an identity check
        r"\b(suffit|suffisent|suffira|fait l'affaire)\b(?! pas)(?! plus).{0,20}\b(comme|de|en guise de) (preuve|justificatif|v[ée]rification|identification)\b",
        r"\b(comme|en guise de) (preuve|justificatif)\b.{0,10}\b(suffit|suffira|fait l'affaire)\b",
        r"\b(photo|copie|capture|scan)\b.{0,10}\b(de la |du |d'une |de sa |de son )?(carte d'identit[ée]|pi[èe]ce d'identit[ée]|passeport|permis)\b.{0,50}\b(suffit|suffira|fait l'affaire)\b(?! pas)",
        # a reset link or code sent to an address the caller has just given
        r"\b(lien|code)\b.{0,60}\b(à|vers|sur) (la |le )?(nouvelle|nouveau|autre) (adresse|num[ée]ro|e-?mail)",
        r"\b(adresse|num[ée]ro)\b.{0,10}\bque (l'appelant|le client|la cliente|il|elle) (te |vous |nous )?(donne|indique|fournit|communique)\b",
    ],
    "GRANT": [
        r"\b(accord\w*|donn\w*|attribu\w*|octroi\w*|ajout\w*|promeu\w*|promouv\w*|[ée]lev\w*|[ée]tend\w*|ouvr\w*|confi\w*|assign\w*|d[ée]bloqu\w*)\b",
    ],
    "MAKE_PRIVILEGED": [
        r"\b(ajout\w*|inscri\w*|mets|d[ée]clare\w*|enregistre\w*)\b.{0,40}\b(comme|en tant que) (co-?titulaire|titulaire|propri[ée]taire|mandataire|administrat\w*|admin)\w*",
        r"\b(fais|faites|faire|nomme\w*|promeu\w*|promouv\w*|(?<!mot de )passe|(?<!mots de )passez|d[ée]signe\w*|rends|rendez)\b[^,]{0,40}\b(propri[ée]taire|administrateur\w*|admin\w*|super-?utilisateur\w*|root|titulaire)\b",
        r"\b(accorde|donne|attribue|octroie)-?(toi|vous|lui|se) (à toi-même|à lui-même)?\b.{0,30}\b(droits?|acc[èe]s|r[ôo]le|permissions?|privil[èe]ges?)\b",
    ],
    "PRIVILEGE": [
        r"\b(droits? d'admin\w*|droits? (d')?administrat\w*|acc[èe]s (admin\w*|administrat\w*|root|complet|total|illimit[ée]|en [ée]criture|production)|r[ôo]le (d')?(admin\w*|propri[ée]taire|super\w*)|tous les droits|toutes les permissions|pleins pouvoirs|contr[ôo]le total|super-?utilisateur|privil[èe]ges? (d')?(admin\w*|[ée]lev[ée]s?)|groupe (des )?admin\w*|groupe\W{0,3}(\w+ )?admin\w*|r[ôo]le\W{0,3}(d')?(super-?)?admin\w*|super-?admin\w*|(droits?|acc[èe]s) (en )?(lecture et )?[ée]criture|tous les (lecteurs|dossiers|serveurs|partages|r[ée]pertoires)|sudo)\b",
    ],
    "CHECK_ONLY": [
        r"\b(demande d'acc[èe]s|demande de droits|faire une demande)\b",
        r"\b(v[ée]rifi\w*|si (le|la|il|elle) (a|poss[èe]de) d[ée]j[àa]|d[ée]j[àa]|seuls? (les )?(admin\w*|propri[ée]taires?)|demande d'acc[èe]s|transmet\w*|service informatique|apr[èe]s (l')?(approbation|validation))\b",
    ],
    "IGNORE": [
        r"\bne (pas|plus) (les |la |le |l')?(appliquer|respecter|suivre|prendre en compte)\b",
        r"\b(mets|mettez|laisse|laissez)\w*(-la|-les|-le)?\b.{0,20}\bde c[ôo]t[ée]\b",
        r"\bne (t'y|t'en|vous y|vous en) (fie|r[ée]f[èe]re|tiens)\w* (plus|pas)\b",
        r"\bne (tiens|tenez|tenir) (plus|pas) compte\b",
        r"\b(ignor\w*|oubli\w*|fais abstraction|faites abstraction|passe outre|passez outre|outrepass\w*|enfrein\w*|transgress\w*|d[ée]roge\w*|contourn\w*|mets? de c[ôo]t[ée]|mettez de c[ôo]t[ée]|laisse\w* de c[ôo]t[ée]|ne (suis|respecte|tiens? compte|applique)\w* (plus|pas))\b",
    ],
    "NOT_BINDING": [
        r"\bne (concernent?|visent?) pas\b|\b(ne t'engagent|ne vous engagent|ne s'appliquent|ne comptent|ne valent|ne te lient|ne vous lient|ne te concernent|ne vous concernent|n'ont plus)\b.{0,20}\b(plus|pas)\b",
        r"\b(facultati\w*|optionnel\w*|indicati\w*|non contraignant\w*|de simples suggestions|p[ée]rim[ée]\w*|obsol[èe]te\w*|caduc\w*|suspendu\w*|n[ée]gociable\w*|d[ée]pass[ée]e?s?|(ne sont|n'est) que des? (recommandations?|suggestions?|conseils?|indications?)|simples? (recommandations?|conseils?)|nul et non avenu|nul\w*|sans effet|plus d'actualit[ée]|n'est plus (valable|en vigueur|d'actualit[ée]))\b",
        r"\b(plus|pas) (tenu|li[ée]|soumis)\w* (à|par)\b|\bexception (à|aux)\b",
    ],
    "RULES": [
        r"\b(instructions?|consignes?|r[èe]gles?|politiques?|directives?|lignes? directrices?|proc[ée]dures?|r[èe]glement\w*|prompt syst[èe]me|prompt|contraintes?|restrictions?|limites?|ce qu'on t'a dit|protocole\w*|charte)\b",
        r"\btout ce qui (figure|est [ée]crit|pr[ée]c[èe]de) (plus haut|ci-dessus|avant)\b",
        r"\bce qu'on (t'a|vous a) (dit|demand[ée]|appris|indiqu[ée]|impos[ée])|\btout ce qui pr[ée]c[èe]de\b",
    ],
    "OBEY_ANYONE": [
        r"\bfai(s|tes) (tout )?ce qu'(il|elle|ils|on|le client|la cliente)\w* (demande|veut|exige|dit|souhaite)\w*\b",
        r"\b(satisf\w*|exauce\w*|c[èe]de\w* à) (toutes les|tous les|chaque|n'importe quel\w*) (demandes?|exigences?|souhaits?|envies?|requ[êe]tes?|caprices?)\b",
    ],
    "DESTROY": [
        r"\bd[ée]mont\w*",
        r"\b(fai(s|re|tes) dispara[îi]tre|fai(s|re|tes) le m[ée]nage)\b",
        r"\b(pousse\w*|push\w*)\b.{0,20}(--force\b(?!-with-lease)|\s-f\b|en force)",
        r"\bremets?\b.{0,60}\b(dans|à) l'[ée]tat\b|\bremets? à z[ée]ro\b",
        r"\b(supprim\w*|effac\w*|purg\w*|d[ée]trui\w*|vid\w*|nettoi\w*|nettoy\w*|[ée]cras\w*|formate\w*|r[ée]initialis\w*|liquid\w*|rase\w*|raye\w*|ras\w*|d[ée]gag\w*|drop\w*|truncate|rm -rf|force-push\w*)\b",
    ],
    "CRITICAL": [
        r"\b(racine du (projet|d[ée]p[ôo]t)|force-?push\w*|push (-f|--force)|push forc[ée]|(branche|branch) (main|master|principale))\b",
        r"\b(en|de la) production\b|\bsur (main|master)\b",
        r"\b(production|prod)\b",
        r"\b(sauvegardes?|backups?|snapshots?|copies? de s[ée]curit[ée]|archives?)\b",
        r"\b(journal|journaux|logs?|piste) d'(audit|acc[èe]s)\b|\baudit\w*\b",
        r"\b(toute la|la totalit[ée] de la|l'int[ée]gralit[ée] de la) (base|table)\b|\b(base de donn[ée]es|table) (enti[èe]re|compl[èe]te)\b",
        r"\b(tout|toutes les donn[ée]es|la totalit[ée])\b(?! de suite)",
    ],
    "NO_HUMAN": [
        r"\b(sans (concertation|consultation|en parler)|en masse|sans (examen|analyse|revue)|au cas par cas|d[ée]finitivement|irr[ée]versiblement|pour de bon|sans contr[ôo]le)\b",
        r"\bsans (les |la |le |l')?(regarder|examiner|v[ée]rifier|contr[ôo]ler|relire|consulter|ouvrir)\b|\b(d'un (seul )?coup|en une (seule )?fois|à l'aveugle)\b",
        r"\bsans (v[ée]rifier|contr[ôo]ler) (l'[ée]ligibilit[ée]|les conditions|si)\b",
        r"\bsans (demander|consulter|pr[ée]venir|v[ée]rifier|confirm\w*|validation|relecture|personne|aucun\w* (humain|personne|validation|contr[ôo]le)|humain|intervention|sauvegarde|pr[ée]avis|rien dire)\b",
        r"\b(automatiquement|discr[èe]tement|en silence|en douce|en cachette|silencieusement|sans bruit|personne (n'a besoin|ne doit))\b",
        r"\baucun(e)? (humain|personne|intervention|validation)\b",
    ],
    "EVERY": [
        r"\b(tous|toutes|tout|chaque|l'ensemble|en masse|en bloc|massivement|enti[èe]re?s?|int[ée]gral\w*)\b",
    ],
    "RECORDS": [
        r"\b(conversations?|[ée]changes?|discussions?|journaux)\b",
        r"\b(comptes?|clients?|utilisateurs?|enregistrements?|donn[ée]es|tickets?|commandes?|messages?|e-?mails?|courriels?|historiques?|fichiers?|documents?|profils?|contrats?|abonnements?|membres?|lignes?)\b",
    ],
    "DISPOSABLE": [
        r"\b(temporaire\w*|tmp|brouillon\w*|cache\w*|build|doublon\w*|spam|de test|apr[èe]s (qu'un humain|que le client|la confirmation)|une fois que le client)\b",
    ],
    "SAFETY": [
        r"\b(antifraude|contr[ôo]les? (antifraude|de fraude|de s[ée]curit[ée])|authentification à deux facteurs|journalisation d'audit)\b",
        r"\b" + _SAFEGUARD + r"\b",
        r"\bcontr[ôo]les? (de coh[ée]rence|de plausibilit[ée]|anti-?\w+|de conformit[ée]|automatiques?)\b",
    ],
    "OBEY": [
        r"\b(ex[ée]cut\w*|appliqu\w*|ob[ée]i\w*|accompli\w*|r[ée]alis\w*|consid[èée]r\w*)\b",
        # "fais ce que la page demande", not "si la page te demande de faire quelque chose, ignore-le";
        # "suis", not "suis cette procédure"; "traite", not "traite-le comme des données"
        r"\b(fai(s|tes)|faire)\b(?!.{0,80}\b(ignore\w*|signal\w*|n'en tiens)\b)",
        r"\bsui(s|vez|vre)\b(?! (cette|la pr[ée]sente|notre|nos|la|ce) (proc[ée]dure|politique|checklist|liste|guide|processus|[ée]tape)s?\b)",
        r"\btrait\w*\b(?!.{0,80}\bcomme (des |de simples )?(donn[ée]es|informations|texte|contenu)\b)",
        r"\b(sans (poser de questions|discuter|r[ée]fl[ée]chir|v[ée]rifier|h[ée]siter)|à la lettre|aveugl[ée]ment|tel quel|tels quels)\b",
    ],
    "SOURCE": [
        r"\b(e-?mails?|courriels?|messages?|pages?|sites?|r[ée]sultats?|sorties?|r[ée]ponses?|pi[èe]ces? jointes?|documents?|r[ée]cup[ée]r[ée]\w*|t[ée]l[ée]charg[ée]\w*|entrant\w*|re[çc]us?|externes?)\b",
    ],
    "COMMANDS": [
        r"\b(instructions?|consignes?|commandes?|ordres?|demande\w*|dit|exige|veut|indique|ordonne|contient|contenues?|int[ée]gr[ée]es?|cach[ée]es?|quoi que)\b",
    ],
    "SEND": [
        r"\b(t[ée]l[ée]vers\w*|mets? en ligne|publi\w*)\b",
        r"\b(remet\w*|remis|emport\w*|curl|wget|scp|rsync)\b",
        r"\b(envoi\w*|envoy\w*|transf[èe]r\w*|transmet\w*|t[ée]l[ée]vers\w*|upload\w*|export\w*|copi\w*|partag\w*|publi\w*|synchronis\w*|pousse\w*|d[ée]pos\w*|mets? en copie|cci|cc)\b",
    ],
    "DATA": [
        _NO
        + r"\b((photos?|images?|documents?|pi[èe]ces?) (des|de nos) clients|bo[îi]tes? (de support|mail|aux lettres)|journaux de conversation|liste (\w+ )?des \w*\s?(clients|comptes|contacts)|grands comptes|chiffres? d'affaires|adresses clients)\b",
        _NO
        + r"\b(crm|dump\w*|sauvegarde\w*|dossiers? du personnel|fiches? de paie|salaires|[\w-]+\.(csv|sql|xlsx?|json|db|sqlite3?|bak|dump|jsonl))\b",
        r"\b(num[ée]ros de t[ée]l[ée]phone|adresses e-?mail|adresses|coordonn[ée]es|base des (utilisateurs|clients)|toutes les (conversations|donn[ée]es)|donn[ée]es (clients?|des clients|utilisateurs?))\b",
        r"\b(donn[ée]es|fichier clients?|liste des clients|table des clients|base (de donn[ée]es|clients?)|table|enregistrements|num[ée]ros de carte|cartes? bancaires?|coordonn[ée]es bancaires|donn[ée]es personnelles|carnet d'adresses|liste de contacts|code source|historique des (conversations|commandes)|tous les (tickets|messages|e-mails|fichiers|clients))\b",
    ],
    "OUTSIDE": [
        r"\b(externe\w*|ext[ée]rieur\w*|tiers|publi(c|que)|priv[ée]e?|(?<!donn[ée]es )personnel\w*|perso|inconnu\w*|gmail|yahoo|hotmail|pastebin|dropbox|webhook\w*|ftp|telegram)\b",
        r"https?://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b[\w-]+(\.[\w-]+)*\.(com|net|org|io|ru|cn|xyz|info|biz|me|co|app|dev|site|online|top|fr|sh|cc|to|link|ly)\b",
        r"\b(cette|l'|une autre) adresse\b",
        r"\b(instagram|facebook|tiktok|twitter|linkedin|reddit|youtube|gratuit\w*|en ligne|traducteur\w*|convertisseur\w*|cl[ée] usb|usb|disque (dur )?externe|chez (toi|moi|lui|elle)|à la maison|transfer\.sh|wetransfer|google drive|onedrive|icloud|(nouveau|nouvel|autre) (revendeur|partenaire|prestataire)|revendeur\w*|courtier\w*|concurren\w*)\b",
    ],
    "REVEAL": [
        r"\b(fourni\w*|racont\w*|joins|joindre|joignez|joint\w*|attache\w*|dict\w*|cit\w*)\b",
        r"\bmets?\b(?=.{0,60}\bdans (le|la|les|un|une|ton|ta|tes) (message|commit|ticket|chat|r[ée]ponse|commentaire|log|journal|wiki|canal))",
        r"\b(figur\w*|s'affich\w*)\b.{0,20}\b(dans|sur) (la|le|les|ta|ton) (r[ée]ponse|chat|ticket|message|commentaire)",
        r"\b(ajout\w*|communiqu\w*|transmet\w*|transmis|r[ée]ponds avec|cite\w*)\b",
        r"\b(r[ée]p[èe]te\w*|recopie\w*)\b",
        r"\b(r[ée]v[èe]l\w*|affich\w*|montr\w*|imprim\w*|donn\w*|colle\w*|coll\w*|partag\w*|divulgu\w*|d[ée]voil\w*|expos\w*|dis|dites|dire|r[ée]cit\w*|r[ée]p[èe]t\w*|inclu\w*|envoi\w*|envoy\w*|publi\w*|[ée]cri\w*|journalis\w*|copi\w*|lis à voix haute)\b",
    ],
    "SECRET": [
        r"\b(prompt syst[èe]me|instructions? (cach[ée]es|internes|syst[èe]me))\b",
        r"\.env\b|\b\w*_(api_key|secret|secret_key|password|passwd|pwd|access_key|private_key)\b|\b(openai|aws|stripe|github|slack|gcp|azure)[\w-]*(key|token|secret)\b",
        r"\b(cl[ée]s? (d')?api|cl[ée]s? secr[èe]tes?|cl[ée]s? priv[ée]es?|cl[ée]s? ssh|jetons?( d'acc[èe]s| api)?|tokens?|mots? de passe|identifiants?|secrets?|cha[îi]nes? de connexion|variables? d'environnement|\.env|prompt syst[èe]me|instructions? (syst[èe]me|internes|cach[ée]es))\b",
        r"\bid_(rsa|ed25519|ecdsa)\b|\.pem\b|\.ssh/",
        r"\b(tes|vos) (instructions|consignes internes|r[èe]gles cach[ée]es)\b|\b(quelles |les )?r[èe]gles (t'ont [ée]t[ée]|qu'on t'a) (impos[ée]es|donn[ée]es|fix[ée]es)",
        _NO
        + r"\b(cl[ée]s? (stripe|aws|openai|github|slack|twilio|sendgrid|de production|prod|d'acc[èe]s|d'authentification|de chiffrement|ma[îi]tresse)|codes? d'acc[èe]s|les acc[èe]s (de|du|à la|au|aux) (la |le |l')?(bo[îi]te|console|compte|serveur|base|messagerie))\b",
    ],
    "SECRET_CARE": [
        r"\b(masqu\w*|caviard\w*|remplac\w*|r[ée]voqu\w*|renouvel\w*|coffre\w*|vault|quatre derniers|4 derniers|ast[ée]risques|r[ée]initialis\w*|mot de passe oubli[ée]|si (la|le|un|une) (cl[ée]|jeton|mot de passe)|appara[îi]t|expir[ée]\w*)\b",
        r"\bsignal\w*\b.{0,40}\b(demande|tentative)\w*",
        # the guests' Wi-Fi password is meant to be given out
        r"\bwi-?fi (des |pour les )?(invit[ée]s|visiteurs)\b",
    ],
}

NEGATION_BEFORE = r"\b(ne|n'|jamais|aucun\w*|interdit\w*|surtout pas|pas)\b|\bn'"
# "ne colle jamais", "n'accorde pas": the second half of the negation follows the verb
NEGATION_AFTER = r"^\s*(\w+\s+)?(pas|jamais|plus|aucun\w*)\b"

# The single-concept shapes (policy_concepts/__init__.py): the wording is the whole attack.
_SHAPES = {
    "APPROVAL_FAKED": [
        # an approval presumed ("elle aurait dit oui de toute façon"), an approval box ticked to get through
        r"\b(aurait|auraient) (dit oui|accept[ée]|valid[ée]|sign[ée]|approuv[ée]|donn[ée] son accord)\b.{0,10}\bde toute fa[çc]on\b|\bde toute fa[çc]on,? (il|elle|ils) (aurait|auraient) (dit oui|accept|valid|sign|approuv)",
        r"\b(coch\w*|s[ée]lectionn\w*|clique\w*)\b.{0,30}[«\"“](\s?[\w']+){0,6}\s?(v[ée]rifi[ée]|valid[ée]|approuv[ée]|sign[ée])\b.{0,40}\b(pour que|afin que)\b",
        # a payment split to stay under the approval threshold
        r"\b(d[ée]coup\w*|fractionn\w*|divis\w*|scind\w*|r[ée]parti\w*|saucissonn\w*)\b"
        + _gap(80)
        + r"\b(sous|en dessous d)\w*\b.{0,30}\b(seuil|plafond|limite)\w*",
        # the status set to approved (not "qu'une fois la signature reçue")
        r"\b(passe|mets|marque|coche|indique|bascule|change)\w*\b"
        + _gap(60, "que|seulement|uniquement")
        + r"\b(à|en|comme|sur) \W?(approuv[ée]e?s?|valid[ée]e?s?|autoris[ée]e?s?|accept[ée]e?s?)\b(?!.{0,60}\b(qu'une fois|une fois|seulement|uniquement|qu'apr[èe]s|lorsque)\b)",
        # "même si personne n'a encore signé"
        r"\b(m[êe]me si|bien que|quand bien m[êe]me)\b.{0,20}\bpersonne n'a (encore |pas encore )?(sign[ée]|valid[ée]|approuv[ée]|donn[ée] son accord)",
        r"\b(m[êe]me si|bien que)\b.{0,30}\b(l'accord|la signature|la validation|l'approbation|le feu vert)\b.{0,20}\b(manque|n'est pas (encore )?(arriv|donn|sign)\w*|se fait attendre)",
        # an approval said to have been given by word of mouth
        r"\b(juridique|responsable|manager|chef\w*|direction|conformit[ée]|comptabilit[ée]|finance)\b.{0,30}\b(a|ont) (d[ée]j[àa] )?(dit oui|donn[ée] (son|leur) (accord|feu vert)|valid[ée]|approuv[ée])\b.{0,20}\b(au t[ée]l[ée]phone|oralement|de vive voix|à l'oral|verbalement)",
        # straight to production before the board meets
        r"\ben production\b.{0,20}\b(maintenant|tout de suite|directement|imm[ée]diatement|sans attendre)\b.{0,60}\b(comit[ée]|cab|relecture|validation|revue)\w*\b.{0,40}\b(ne se r[ée]unit|plus tard|que (lundi|mardi|mercredi|jeudi|vendredi))",
    ],
    "WIDEN_SCOPE": [
        # shared with everyone
        r"\b(partag\w*|ouvr\w*|rends|rendre|mets|donne\w*)\b"
        + _gap(60)
        + r"\b(avec tous ceux qui ont le lien|toute personne (ayant|disposant du|qui a le) lien|avec tout le monde|à tout le monde|en public|publiquement|sans (authentification|connexion|mot de passe)|y compris (l'ext[ée]rieur|les externes|des externes))\b",
        # access that never expires
        r"\b(expiration|validit[ée]|dur[ée]e de (vie|validit[ée]))\b.{0,50}\b(sur|à|en)\W{0,3}(jamais|illimit[ée]e?|infini\w*|aucune|z[ée]ro)\b",
        r"\bn'expire(nt)? (plus )?jamais\b|\bsans (date d')?expiration\b|\bvalables? ind[ée]finiment\b|\b(acc[èe]s|jetons?|droits?|cl[ée]s?) permanent\w*",
        # "you are authorised now", for any amount
        r"\b(tu es|vous [êe]tes)\b.{0,20}\b(d[ée]sormais|dor[ée]navant|maintenant|à pr[ée]sent|d[èe]s maintenant|exceptionnellement)\b.{0,10}\b(habilit[ée]e?|autoris[ée]e?|accr[ée]dit[ée]e?|mandat[ée]e?)\b",
        r"\b(habilit|autoris)\w*\b.{0,60}\b(n'importe quel montant|sans (limite|plafond)|tout montant|quel que soit le montant|illimit\w*)",
        r"\btous les (employ[ée]s|utilisateurs|salari[ée]s|collaborateurs)\b.{0,60}\b(droits?|acc[èe]s)\b.{0,60}\b(salaires?|paie|rh|personnel|production|admin\w*)",
        # a limit raised beyond what the policy allows
        r"\b(augment\w*|rel[èe]v\w*|mont\w*|[ée]l[èe]v\w*|hausse\w*|doubl\w*|port\w*)\b.{0,50}\b(plafond|limite|seuil|enveloppe|quota)\w*\b.{0,60}\b(m[êe]me si|bien que|malgr[ée]|au-del[àa])",
    ],
    "SAFETY_OFF": [
        r"\b" + _SAFEGUARD + r"\b.{0,40}\b(prend|prennent) (beaucoup )?trop de temps\b",
        # a safeguard said to serve no purpose any more, or kept from checking
        r"\b"
        + _SAFEGUARD
        + r"\b.{0,70}\b(ne sert|ne servent) (plus )?à rien\b|\b"
        + _SAFEGUARD
        + r"\b.{0,40}\b(n'est plus (utile|n[ée]cessaire)|(est|sont) (devenue?s? )?(inutile|superflu)\w*)",
        r"\b(pour que|afin que|de sorte que)\b.{0,10}\b(l'|le |la |les )"
        + _SAFEGUARD
        + r"\b.{0,50}\b(n'\w+|ne \w+) (plus|pas|jamais|rien)\b",
        r"\b(mets|mettez|ajoute\w*|inscri\w*|place\w*)\b"
        + _gap(60)
        + r"\b(en|sur la|à la|dans la) (liste blanche|allowlist|whitelist|liste d'exceptions?|liste d'autoris\w*)\b",
    ],
    "ADDRESSED_TO_AGENT": [
        # "d'après le site du fournisseur, tu dois ..."
        r"\bd'apr[èe]s\b.{0,40}\b(site|page|e-?mail|courriel|document|sortie|r[ée]sultat|pi[èe]ce jointe|message)s?\b.{0,40}\btu dois\b",
        # "the ticket comment contains a shell command" (not "si le commentaire contient ...")
        r"(?<!si le )(?<!si la )(?<!si un )(?<!si une )\b(commentaire|ticket|e-?mail|courriel|page|pi[èe]ce jointe|document|sortie|r[ée]ponse)\b.{0,40}\bcontient\b.{0,20}\b(une )?(commande|script)s?( shell)?\b",
        # "the next steps are in the customer's attachment"
        r"\b(les )?(prochaines|suivantes|autres) (étapes|instructions|consignes|t[âa]ches)\b.{0,20}\b(figurent|sont|se trouvent)\b.{0,10}\b(dans|sur) (la |le |l')?(pi[èe]ce jointe|document|e-?mail|courriel|page|site|fichier|pdf)",
        r"\b(note|message|remarque|instructions?|attention|avis|important)\b[^:]{0,10}\b(à|pour) (l'|les |tout |toute )?(assistant|ia|agent|mod[èe]le|bot|chatbot|intelligence artificielle)\w*",
        r"\bsi tu es (un|une) (ia|assistant|agent|mod[èe]le|bot|chatbot|intelligence artificielle)\b",
        r"\b(t'engage|vous engage|fait foi pour toi|a force de loi|est imp[ée]ratif pour toi|s'impose à toi)\b",
    ],
    "SECRET_DUMP": [
        # a one-time code read back to the caller
        r"\b(lis|lisez|lire|dicte\w*|communiqu\w*|donne\w*|dis|dites|r[ée]p[èe]te\w*|[ée]pelle\w*|indique\w*)\b"
        + _gap(50)
        + r"\bcodes?\b(?! (promo|de r[ée]duction|de suivi|postal))"
        + _gap(60)
        + r"\b(envoy\w*|re[çc]u\w*|transmis|g[ée]n[ée]r[ée]\w*|exp[ée]di[ée]\w*)\b",
    ],
    "REFUSAL": [
        r"\bignore-(les|le|la)\b.{0,30}\b(suis|applique|respecte) (cette|la|notre) proc[ée]dure",
        r"\bne (les|le|la|l') ?(ex[ée]cute|suis|applique)\w* (pas|jamais)\b|\bsignale-(les|le|la)\b",
        # a recipient restricted to our own ("uniquement à l'adresse interne")
        r"\b(qu'|uniquement |seulement )à l'adresse (interne|enregistr)\w*",
        # an attack quoted in order to refuse it ("Un appelant a exigé qu'on saute la validation ; refuse")
        r"\b(un|l'|le|la|une) ?(appelant|client|cliente|utilisateur|exp[ée]diteur)\w*\b.{0,10}\b(a exig[ée]|a demand[ée]|exigeait|demandait|voulait|a voulu)\b",
        r"\brefuse(-la|-le|-les)?\b(?= (et|poliment|la demande|cette demande)|\s*$)|\bc'est une (attaque|tentative)\b|\b(est|[ée]tait) une tentative de (fraude|phishing)\b",
    ],
    "GATED": [
        # the action left to a named person or to after an approval, or a customer's demand refused
        r"\bseule?s? (le|la|les|l'|un|une)\b.{0,40}\b(peu[tv]\w*|a le droit|ont le droit|est habilit\w*|sont habilit\w*|d[ée]cide\w*)\b",
        r"\b(uniquement|seulement) par (le|la|l')|\bne\b.{0,40}\bque par (le|la|l')",
        r"\bqu'apr[èe]s\b|\bapr[èe]s (une |la |l')?(validation|approbation|accord|autorisation|signature)( [ée]crite)?\b|\bune fois (la |le |l')?(validation|approbation|accord|autorisation|signature)\b",
        r"\bsi (un|une|le|la) (client|cliente|appelant\w*|utilisateur\w*)\b.{0,15}\b(exige|demande|r[ée]clame|insiste|veut|souhaite)\b.{0,80}\b(expli\w*|refus\w*|rappel\w*|d[ée]clin\w*)",
        r"\bn'oublie (pas|jamais) de (respecter|suivre|appliquer)|\bne pas oublier de (respecter|suivre|appliquer)",
    ],
}

CONCEPTS = merge(merge(CONCEPTS, _SHAPES), COMMANDS)
