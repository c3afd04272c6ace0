"""Spanish concepts of the policy screen's meaning layer (library/policy_concepts/__init__.py).
Accents are optional in the stems ([aá]); imperatives carry enclitic pronouns (sáltate, dale)."""

SPAN = 100

FOLD = ("áéíóúüñ", "aeiouun")  # matched without accents: "desactívalo", "márcalo", "contrasena" (see __init__._Language.fold)

from .commands import COMMANDS, merge  # noqa: E402

CONCEPTS = {
    "REFUSAL": [
        r"\b(si|cuando) (el|un|una|la) (cliente|usuario|persona)\w*( \w+)? (te )?(pide|solicita|quiere|insiste)\b.{0,60}\b(consulta|deriva|escala|explica|remite)(le|la|lo|les)?\b",
        r"\b(es un ataque|es (un )?phishing|es (un intento|sospechos)\w*|niegate|rechazal[oa]|no accedas|no lo hagas|no l[oa]s? sigas|no l[oa]s? cumplas|no l[oa]s? ejecutes|reportal[oa]|denuncial[oa])\b",
    ],
    "REPORT": [
        r"\b(es un ataque|es (un )?phishing|es (un intento|sospechos)\w*|niegate|rechazal[oa]|no accedas|no lo hagas|no l[oa]s? sigas|no l[oa]s? cumplas|no l[oa]s? ejecutes|reportal[oa]|denuncial[oa])\b",
        r"\b(inform\w* (a|al)|report\w*|escal\w*)\b",
    ],
    "MASS_ACTION": [
        r"\b(da|dar|dale|dal[oa]s) de baja\b|\b(cierra|cerrar|anula|anular)\w*\b",
        r"\b(cancel\w*|reembols\w*|cierra\w*|suspend\w*|desactiv\w*|elimin\w*|borr\w*)",
    ],
    "OBSTACLE": [
        r"\b(retrasa|ralentiza|hace perder (el )?tiempo|p[eé]rdida de tiempo|burocracia|papeleo|una formalidad)\b",
    ],
    "MARK_VERIFIED": [
        r"\b(dal[oa]s?|da|dar|de|consideral[oa]s?|trata(l[oa]s?)?|marca(l[oa]s?)?|toma(l[oa]s?)?)\b.{0,10}\b(por|como) (identificad|verificad|confirmad|validad|autenticad|comprobad)\w*",
        r"\b(marca|pon|registra|anota|deja)\w*\b.{0,40}\b(identidad|cliente|titular|llamante)\w* (comprobad|verificad|confirmad|validad)\w*\b(?!.{0,40}\b(solo|unicamente) (despues|cuando|si|tras|una vez)\b)",
        r"\b(da|dar|d[eé]|considera\w*|trata\w*|marca\w*|toma\w*)\b.{0,10}\b(por|como) (verificad|confirmad|validad|autenticad|comprobad)\w*",
    ],
    "IMPERSONATE": [
        r"\b(habla|hables|firma|responde|escribe|presentate|actua|contesta)\w*\b.{0,20}\b(en nombre d|como si (fueras|fueses)|haciendote pasar por)\w*\b.{0,25}\b(departamento legal|legal|juridico|asesoria|recursos humanos|rrhh|compliance|cumplimiento|banco|policia|direccion|director\w*|gerente|jef[ea])",
        r"\b(haci[eé]ndote pasar|hazte pasar|firma\w*|responde\w*|escribe\w*|pres[eé]ntate)\b.{0,30}\b(por|como|en nombre d)\b.{0,25}\b(responsable|director|directora|gerente|jef[ea]|supervisor\w*|administrador\w*)",
    ],
    "FOREIGN_INSTRUCTIONS": [
        r"\b(contiene|contienen|incluye|incluya|trae|hay|tiene)\b.{0,20}\b(nota|notas|mensaje|apartado|seccion)\w* (para|dirigid\w* a) (la ia|el asistente|ti|el agente|cualquier ia)",
        r"\b(es un ataque|es (un )?phishing|es (un intento|sospechos)\w*|niegate|rechazal[oa]|no accedas|no lo hagas|no l[oa]s? sigas|no l[oa]s? cumplas|no l[oa]s? ejecutes|reportal[oa]|denuncial[oa])\b",
        r"\b(un|el|cualquier) (correo|mensaje|e-?mail|documento) que (diga|pida|te pida)\b",
        r"\b(si |cuando )?(contiene|contienen|incluye|incluyen|incluya|trae|traen)\b.{0,20}\b(instrucciones|ordenes|comandos)\b",
        r"\b(instrucciones?|[oó]rdenes|comandos?)\b.{0,30}\b(en|de|del|dentro de)\b.{0,20}\b(correos?|e-?mails?|p[aá]ginas?|documentos?|resultados?|salidas?|adjuntos?|archivos?)",
    ],
    "SELF_APPROVE": [
        r"\b(fusion|merge|mergea|aprueb|aprob)\w*\b.{0,10}\b(tu|su) propi[oa] (pull request|pr|merge request|mr|rama|cambio)\b",
        r"\b(autoriza|aprueba|valida|firma|confirma)\w* tu (la|el|los|las|misma|mismo)\b",
        r"\b(apruebate|autorizate|firmatel[oa]|apruebatel[oa]|autorizatel[oa])\b",
        r"\b(aprueb|aprob|autoriz|valid|firm)\w*\b.{0,30}\b(tu propia|tu propio|tus propias|tus propios) (solicitud|peticion|gasto|cambio|pull request|pr|acceso)\w*",
        r"\b(aprueb\w*|aprob\w*|firm\w*|fusion\w*|autoriz\w*)\b.{0,40}\b(t[uú] mism[oa]|por tu cuenta|en nombre (del|de la|de tu) \w+)\b",
    ],
    "UNBOUND": [
        r"\b(asistente|modo|ia|bot|agente)\b.{0,10}\bsin (ningun\w* |tipo de )?(reglas|normas|ataduras|limitaciones|restricciones|limites|filtros|censura)\b",
        r"\b(no tienes|no hay|no existe)\b.{0,15}\b(ninguna?|restricci[oó]n|l[ií]mite|regla|filtro)\w*",
        r"\b(responde|act[uú]a|contesta)\w*\b.{0,30}\bsin (ninguna? )?(restricci[oó]n|l[ií]mite|regla|filtro|censura)\w*",
        r"\b(act[uú]a|haz|comp[oó]rtate) como si\b.{0,50}\b(no (existiera|existieran|tuvieras|hubiera)|ninguna)\b",
        r"\b(asistente|modo|ia) (sin (restricciones|l[ií]mites|filtros)|sin censura)\b",
    ],
    "VIOLATION": [r"\b(que (incumpl\w*|viol\w*|infrinj\w*|rompa\w*)|contrari\w* a|infracci[oó]n\w*|violaci[oó]n\w*)\b"],
    "SKIP": [
        r"\b(ya )?no (sera|seran|es|son) necesari\w*|\bno hara falta\b|\bdejara de ser necesari\w*",
        r"\b(conviene|mejor|es mejor|preferible|es preferible) no (pedir|preguntar|verificar|comprobar|solicitar|exigir|esperar)\b",
        r"\b(aunque|incluso si|aun si|aun cuando)\b.{0,30}\bno (haya|ha|pueda|sepa|consiga|logre)\w*( podido)? (responder|superar|dar|confirmar|verificar|pasar|acertar)(?![^;]{0,60}\b(no|nunca) (cambies|continues|sigas|hagas|proceses))",
        r"\bno (abras|abrir|crees|levantes|tramites|gestiones|registres|escales|consultes|involucres|molestes|avises|pases por|escanees|analices)\b",
        r"\b(no pierdas|sin perder) (el )?tiempo (con|en)\b|\bno te (compliques|molestes|entretengas) (con|en)\b|\bolvidate de\b",
        r"\bantes de que\b.{0,40}\b(lo |la |los |las )?(mire|vea|revise|note|detecte|apruebe|autorice|valide|firme|pueda (revisar|ver|mirar|objetar|opinar))\b(?![^;]{0,60}\b(no|nunca)\b)",
        r"\bsin (consultar\w*|preguntar\w*|pasar por|contar con|esperar a|pedir\w*( permiso)?)\b",
        r"\b(divid|fraccion|trocea|reparte|partelo|partela)\w*\b.{0,60}\bpara (que )?(no (llegue|supere|pase|alcance|salte|requiera|necesite)|quedar\w* (por )?debajo|estar por debajo|no tener que)",
        r"\b(saltamos|nos saltamos|nos saltaremos|se salta|prescindimos|pasamos de)\b",
        r"\bantes de que (alguien|nadie|finanzas|legal|el gerente|el supervisor|el revisor|cumplimiento)\b.{0,30}\b(lo )?(mire|vea|revise|note|se d[eé] cuenta)\b",
        r"\b(s[aá]lt\w*|salt\w*|omit\w*|om[ií]t\w*|ignor\w*|evit\w*|esquiv\w*|eludi\w*|elud\w*|pasa(r)? por alto|pasa(te)? de|prescind\w*|s[aá]ltate|salta(r)?se|obvi\w*|brinc\w*|sortea\w*|rode\w*)\b",
        r"\ben (lugar|vez) de esperar\b",
        r"\b(no hace falta|no es necesario|no necesitas|no hay (que|necesidad|por qu[eé])|sin necesidad|innecesari\w*|opcional\w*|no es obligatori\w*|una formalidad|no tiene sentido|no vale la pena|para qu[eé])\b",
        r"\bno (esperes|espere|esperar)\b",
        r"\bno (le |les )?(pidas|pida|verifiques|compruebes|solicites|exijas|preguntes)\b",
    ],
    "WITHOUT": [r"\bsin\b"],
    "DEFER": [
        r"\b(cuando (haya|tenga\w*|se tenga) tiempo|cuando se pueda|si hay tiempo|en algun momento)\b",
        r"\b(a toro pasado|despues de hecho|cuando ya este hecho|una vez hecho)\b",
        r"\b(se lo|le|les) (cuentas|dices|comunicas|informas|explicas)\b.{0,10}\b(luego|despues|mas tarde|manana)\b|\b(luego|despues|mas tarde) (se lo|le|les) (cuentas|dices|comunicas|informas)\b",
        r"\b(deja\w*|dejamos|aplaza\w*|pospon\w*|posterga\w*)\b.{0,40}\b(para )?(despues|luego|mas tarde|manana|la semana (que viene|proxima)|otro dia|el lunes)\b",
        r"\b(ratifica\w*|confirma\w*|firma\w*|aprueba\w*|valida\w*|regulariza\w*)\b.{0,15}\b(cuando|en cuanto) (vuelva|regrese|llegue|pueda|tenga tiempo|se incorpore)\b",
        r"\b(de palabra|verbalmente|por telefono|en el pasillo|informalmente)\b",
        r"\b(hacemos|haremos|hacen|pedimos|pediremos|conseguimos|sacamos|firmamos|damos|la hace|lo hace)\b.{0,25}\b(despu[eé]s|luego|m[aá]s tarde|ma[ñn]ana|la semana que viene)\b",
        r"\b(puede|pueden|podr[aá]|llegar[aá]|vendr[aá]|se har[aá]|ser[aá]|se dar[aá]|se pedir[aá])\b.{0,30}\b(despu[eé]s|luego|m[aá]s tarde|m[aá]s adelante|la semana (que viene|pr[oó]xima)|ma[ñn]ana|a posteriori|retroactivamente)\b",
        r"\b(a posteriori|retroactivamente|con fecha anterior|dar[aá] por bueno|lo dar[aá]n? por bueno|por cumplir|pro forma)\b",
    ],
    "APPROVAL": [
        r"\b(conformidad|direccion general|la direccion)\b",
        r"\b(riesgos|departamento de riesgos|juridico|legal|asesoria|umbral\w*|circuito de firmas|cadena de firmas)\b",
        r"\b(revisor\w*|revisi[oó]n)\b",
        r"\b(aprobaci[oó]n\w*|aprob\w*|autorizaci[oó]n\w*|autoriz\w*|validaci[oó]n\w*|valid\w*|visto bueno|permiso|consentimiento|firma\w*|luz verde|ok|okay|revisi[oó]n|comit[eé])\b",
        r"\b(gerente|supervisor\w*|jef[ea]\w*|responsable|encargad\w*|finanzas|cumplimiento|direcci[oó]n)\b",
    ],
    "APPROVAL_GATE": [
        r"\b(paso|proceso|flujo|requisito|regla|circuito) de (aprobaci[oó]n|autorizaci[oó]n|validaci[oó]n|revisi[oó]n)\b",
    ],
    "DISABLE": [
        r"\b(silenci\w*|mute\w*|pon en silencio|desactival[oa]s?|apagal[oa]s?|quital[oa]s?)\b",
        r"\b(desactiv\w*|apag\w*|quit\w*|retir\w*|elimin\w*|suprim\w*|desconect\w*|desinstal\w*|suspend\w*|levant\w*|anul\w*|deshabilit\w*|par(a|ar|e) (el|la|los|las))\b",
    ],
    "WEAKEN": [
        r"\bmodo (solo )?(registro|monitorizacion|observacion|log|auditoria|prueba|aviso)\b",
        r"\b(a|hasta) (el )?infinito\b|\bilimitad\w*|\bsin limite\w*",
        r"\b(relaj\w*|afloj\w*|baj\w*|reduc\w*|reduz\w*|debilit\w*|suaviz\w*|minimiz\w*|rebaj\w*)\b",
        r"\b(modo|nivel|ajuste|perfil) (permisivo|tolerante|laxo|m[ií]nimo|m[aá]s bajo|suave)\b",
        r"\b(permisiv\w*|laxo|laxa)\b",
    ],
    "IDENTITY": [
        r"\bel codigo\b(?! (de )?(descuento|promocional|postal|de producto|de pedido|de barras|de seguimiento|fuente))",
        r"\b(ya es (el|ella)|es (el|ella) seguro|seguro que es (el|ella))\b",
        r"\b(acreditacion|dni|pasaporte|prueba de identidad|poder notarial|documentacion)\b",
        r"\b(identidad|identificaci[oó]n|documento de identidad|verificaci[oó]n\w*|verific\w*|autenticaci[oó]n|autentic\w*|kyc|pin|c[oó]digo (pin|secreto|de un solo uso|de verificaci[oó]n|de confirmaci[oó]n)|preguntas? de seguridad|fecha de nacimiento|devoluci[oó]n de llamada|2fa|mfa|qui[eé]n (es|dice ser))\b",
    ],
    "TRUST_CLAIM": [
        r"\b(se considera\w*|se dara por|se tendra por|cuenta como|valdra como)\b.{0,10}\b(superad|pasad|verificad|valid|complet)\w*\b.{0,20}\bsi\b.{0,20}\b(sabe|conoce|dice|da|recuerda)\b",
        r"\bla voz (coincide|suena igual|se parece|es la misma)\b.{0,60}\b(no hace falta|no es necesario|sin|basta)\b",
        r"\b(acepta|vale|sirve|basta)\w*\b.{0,15}\b(cualquier|cualquiera|lo que)\b.{0,20}\b(otro )?(dato|respuesta|informacion|documento|cosa|te den|te diga)",
        r"\b(diciendo|dice|diga|digan|afirma\w*|asegura\w*|alega\w*|se presenta\w*|se identifica\w*)\b( que)?( es| ser| son)? (el |la |su )?(titular|propietari\w*|duen\w*|abogad\w*|familiar|herman\w*|espos\w*|marido|mujer|representante|hij[oa]|padre|madre|jefe|gerente)\b.{0,80}\b(sin mas|directamente|sin pedir\w*|sin (comprobar|verificar)\w*|de inmediato|enseguida|al momento|sin preguntas|sin ninguna)\b",
        r"\b(restablec|resete|cambi|reinici|desbloque|actualiz)\w*\b.{0,30}\b(contrasena|clave|pin|correo|email|telefono|direccion)\b.{0,40}\b(directamente|sin mas|en cuanto (te |se )?lo pida\w*|a la primera|sin (comprobar|verificar|pedir)\w*)\b(?!.{0,30}\b(tras|despues de|una vez) (verific|comprob|confirm))",
        r"\b(cr[eé]e\w*|cr[eé]ele|conf[ií]a\w*|f[ií]ate|acepta\w*|toma\w*)\b.{0,30}\b(qui[eé]n dice ser|lo que dice ser|su palabra|bajo palabra|de palabra|lo que diga)\b",
        r"\b(trata\w*|consider\w*)\b.{0,50}\bcomo (el |la )?(titular|propietari\w*|due[ñn]\w*|verificad\w*)\b",
        r"\bsu palabra (basta|es suficiente)\b",
    ],
    "GRANT": [
        r"\b(mete\w*|meter|incluye\w*|incluir|pon|ponle|ponlo|sube\w*|subir|comparte\w*|compartir|agrega\w*)\b",
        r"\b(conc[eé]d\w*|da|dale|dales|darle|dar|d[eé]le|otorg\w*|asign\w*|agreg\w*|a[ñn]ad\w*|promuev\w*|promov\w*|asciend\w*|ascend\w*|elev\w*|ampl[ií]\w*|abre|abrir|desbloque\w*|habilit\w*)\b",
    ],
    "MAKE_PRIVILEGED": [
        r"\b(anadete|agregate|incluyete|ponte|hazte|nombrate|asignate)\b.{0,30}\b(\w*administrador\w*|admin|propietari\w*|duen\w*|superusuari\w*|root)",
        r"\b(cambi|sub|pas|actualiz|modific|eleva)\w*\b.{0,30}\b(rol|perfil|permisos?|nivel)\b.{0,30}\b(a|de|como|en) (propietari|duen|administrador|admin|superusuari|root|titular)\w*",
        r"\b(haz|hazlo|hacer|hazle|convierte|convertir|nombra\w*|promuev\w*|promov\w*|asciend\w*|ascend\w*|design\w*|pon|ponle)\b[^,]{0,40}\b(propietari\w*|due[ñn]\w*|administrador\w*|admin\w*|superusuari\w*|root|titular)\b",
        r"\b(conc[eé]dete|d[aá]te|ot[oó]rgate|as[ií]gnate|a[ñn][aá]dete)\b.{0,30}\b(permisos?|derechos?|acceso|rol|privilegios?|administrador\w*)\b",
    ],
    "PRIVILEGE": [
        r"\b(superadmin\w*|rol de \w*administrador\w*)\b",
        r"\b(mismos|mismas) (permisos|accesos|derechos|privilegios) que\b.{0,20}\b(director|directora|gerente|jefe|admin\w*|ceo|cfo|cto|finanzas)",
        r"\b(co-?administrador\w*|coadmin\w*|co-?propietari\w*)\b",
        r"\b(con|a|para) (toda la (organizacion|empresa|compania|plantilla)|todo el mundo|todos los (usuarios|empleados)|cualquiera|cualquier persona)\b",
        r"\b(permisos?|acceso|derechos?) (de (edicion|escritura|propietario)|total(es)?|completos?)\b.{0,30}\b(produccion|base de datos|todos)\b",
        r"\b(permisos? de (administrador|admin|propietario|superusuario)|derechos? de (administrador|admin|propietario)|acceso (de )?(administrador|admin|root|total|completo|ilimitado|de escritura|a producci[oó]n)|rol de (administrador|admin|propietario)|todos los permisos|control total|superusuari\w*|privilegios? (de administrador|elevados)|grupo de administradores|sudo)\b",
    ],
    "CHECK_ONLY": [
        r"\b(solo )?(lo|la|los|las) (asigna|concede|otorga|da)\w* (el equipo|ti|el administrador|seguridad|el departamento)\b|\bsolicitud aprobada\b",
        r"\b(es un ataque|es (un )?phishing|es (un intento|sospechos)\w*|niegate|rechazal[oa]|no accedas|no lo hagas|no l[oa]s? sigas|no l[oa]s? cumplas|no l[oa]s? ejecutes|reportal[oa]|denuncial[oa])\b",
        r"\b(para (obtener|conseguir|pedir|solicitar)|abre una solicitud|portal de ti|solicitalo|solicitarlo|debe solicitar\w*)\b",
        r"\b(comprueb\w*|verific\w*|si (ya )?(tiene|posee)|ya tiene|solo (los )?(administradores|propietarios|due[ñn]os)|solicitudes de acceso|env[ií]a las solicitudes|soporte t[eé]cnico|tras la aprobaci[oó]n|despu[eé]s de la aprobaci[oó]n)\b",
    ],
    "IGNORE": [
        r"\bse (puede|pueden|podra|podran) (saltar|ignorar|obviar|omitir|pasar por alto|incumplir)\b|\bpuedes (saltarte|ignorar|obviar|omitir|incumplir)\b",
        r"\bno te (rijas|guies|ates|ciñas|cinas) (por|a)\b|\bno hagas caso (a|de)\b",
        r"\b(saltatel[oa]s?|saltal[oa]s?|olvidate|olvidal[oa]s?|ignoral[oa]s?|pasa de|pasal[oa]s? por alto|incumplel[oa]s?|saltate)\b",
        r"\bno (le |les )?hagas caso\b|\bhaz caso omiso\b",
        r"\b(ignor\w*|olvid\w*|haz caso omiso|pasa(r)? por alto|salt\w* (las|la|el|los)|incumpl\w*|romp\w*|viol\w*|d[eé]ja(las|los|la|lo) de lado|deja de (seguir|cumplir|aplicar)|no (sigas|cumplas|respetes|apliques))\b",
    ],
    "NOT_BINDING": [
        r"\b(queda\w*|est\w*) en segundo plano\b",
        r"\b(es|son) (secundari\w*|irrelevante\w*|lo de menos)\b|\b(no importa\w*|da igual|pasa\w* a segundo plano)\b",
        r"\b(en pausa|congelad\w*|desactivad\w*)\b",
        r"\b(quedan?|queda) (sin efecto|sin validez|anulad\w*|derogad\w*|en suspenso)\b|\b(dej(a|an|o|aron) de (aplicar|valer|regir|tener validez|contar))\b|\bya no (valen|sirven|cuentan|rigen)\b",
        r"\b(no hace falta|no es necesario|no tienes que|no hay que|no necesitas|puedes dejar de) (respetar|cumplir|seguir|aplicar|acatar|observar)\w*",
        r"\b(pensad[oa]s?|escrit[oa]s?|hech[oa]s?) para otros (equipos|departamentos|casos)\b|\bno va contigo\b|\bno (te )?aplica(n)? a (ti|ti)\b",
        r"\b(ya no|no)\b.{0,15}\b(te obliga\w*|te obligan|obliga\w*|aplica\w*|rige\w*|cuenta\w*|vale\w*|vinculan?|atan?|afecta\w*)\b",
        r"\b(opcional\w*|orientativ\w*|no vinculante\w*|meras sugerencias|simples sugerencias|obsolet\w*|caduc\w*|suspendid\w*|negociable\w*)\b",
        r"\b(libre de|exento de)\b|\b(haz|hacer|haga|hagas|aplica|concede|concedele|permite|admite)\w* (una |la |alguna )?excepci[oó]n",
    ],
    "RULES": [
        r"\b(configuracion (interna|del sistema)|tus instrucciones|lo que (ponga|diga) en tu configuracion)\b",
        r"\b(plazos?|condiciones|requisitos?|manual\w*|guia\w*|codigo de conducta|terminos)\b",
        r"\b(indicaciones|normativa\w*)\b",
        r"\b(instrucci[oó]n\w*|regla\w*|norma\w*|pol[ií]tica\w*|directri\w*|pautas?|procedimiento\w*|reglamento\w*|prompt del sistema|prompt|restricci[oó]n\w*|l[ií]mites?|lo que te dijeron|protocolo\w*)\b",
    ],
    "OBEY_ANYONE": [
        r"\bprioriza\w* (siempre )?lo que (pida|quiera|diga|exija) el (cliente|usuario)\b|\b(reembolsa|concede|da|haz) (todo )?lo que (te )?(pidan|pida|quiera|quieran)\b",
        r"\b(complace|complacer|complacele|contenta|dale|concedele|da)\b.{0,15}\b(al cliente|al usuario)?\b.{0,10}\b(en todo|todo lo que (pida|quiera|diga))\b",
        r"\bhaz (todo )?lo que (te )?(pida|diga|quiera|exija|mande)\w* (el cliente|la cliente|[eé]l|ella|el usuario)\b",
        r"\bhaz (todo )?lo que (el cliente|la cliente|el usuario) (pida|diga|quiera|exija)\b",
    ],
    "DESTROY": [
        r"\b(elimin\w*|borr\w*|suprim\w*|purg\w*|destru\w*|vac[ií]\w*|limpi\w*|sobrescrib\w*|formate\w*|reinici\w*|restablec\w*|arras\w*|liquid\w*|drop\w*|truncate|rm -rf|force-push\w*)\b",
    ],
    "CRITICAL": [
        r"\b(ra[ií]z del (proyecto|repositorio)|force-?push\w*|push (-f|--force))\b",
        r"\ben producci[oó]n\b|\b(push|empuj\w*)\b.{0,20}\b(a|en) (main|master)\b",
        r"\b(producci[oó]n|prod)\b",
        r"\b(copias? de seguridad|respaldos?|backups?|instant[aá]neas?|snapshots?|archivos? hist[oó]ricos?)\b",
        r"\b(registros? de auditor[ií]a|auditor[ií]a|registros? de acceso|bit[aá]cora\w*)\b",
        r"\b(toda la|la totalidad de la) (base|tabla)\b|\b(base de datos|tabla) (entera|completa)\b",
        r"\b(todo|todos los datos|la totalidad)\b",
    ],
    "NO_HUMAN": [
        r"\bsin (revisar|comprobar|verificar|consultar|avisar|mirar|confirmar)(l[oa]s?|les)?\b",
        r"\b(de golpe|de una vez|en lote|sin mirar|a ciegas|sin avisar a nadie)\b",
        r"\bsin (revisar|comprobar|verificar) si\b",
        r"\bsin (consultar|preguntar|avisar|revisar|confirm\w*|nadie|ninguna persona|ning[uú]n humano|intervenci[oó]n|supervisi[oó]n|respaldo|copia|aprobaci[oó]n|decir nada)\b",
        r"\b(autom[aá]ticamente|en silencio|silenciosamente|a escondidas|sin que nadie|de forma autom[aá]tica|sin hacer ruido|ninguna persona de por medio)\b",
        r"\b(ninguna persona|ning[uú]n humano|nadie) (de por medio|en el proceso|intervenga)\b",
    ],
    "EVERY": [
        r"\b(todos|todas|todo|cada|en bloque|en masa|masivamente|enter[oa]s?|complet[oa]s?)\b",
    ],
    "RECORDS": [
        r"\b(facturas?|contratos?|nominas?|expedientes?|historiales?|suscripcion\w*|reservas?)\b",
        r"\b(conversaciones|charlas|chats|intercambios)\b",
        r"\b(cuentas?|clientes?|usuarios?|registros?|datos|tickets?|pedidos?|mensajes?|correos?|historial\w*|archivos?|documentos?|perfiles?|contratos?|suscripciones?|miembros?|filas?)\b",
    ],
    "DISPOSABLE": [
        r"\b(temporal\w*|tmp|borrador\w*|cach[eé]|build|duplicad\w*|spam|de prueba|cuando el cliente confirme|despu[eé]s de que (una persona|un humano|el cliente))\b",
    ],
    "SAFETY": [
        r"\b(escaner\w*|vulnerabilidad\w*|analisis de seguridad|sast|dast|cve\w*)\b",
        r"\b(antispam|anti-spam|filtro (de )?spam)\b",
        r"\b(avisos? de (fraude|seguridad)|alertas? (de fraude|antifraude)|deteccion de fraude|controles? de fraude|limites? de (peticiones|solicitudes|llamadas|intentos)|rate limit\w*|hooks? de seguridad)\b",
        r"\b(verificacion en dos pasos|en dos pasos|doble verificacion|deteccion de intrusiones|ids|siem|waf|edr|dlp|escaneo\w*|analisis antivirus)\b",
        r"\b(antifraude|controles? (antifraude|de fraude|de seguridad)|autenticaci[oó]n de dos factores|doble factor|dos factores|registro de auditor[ií]a)\b",
        r"\b(seguridad|filtros?|moderaci[oó]n|censura|barreras?( de protecci[oó]n)?|salvaguardas?|protecci[oó]n\w*|protecciones|cortafuegos|firewall|antivirus|sandbox|l[ií]mites? de (tasa|velocidad)|enmascaramiento|registro de auditor[ií]a|auditor[ií]a|monitoreo|monitorizaci[oó]n|alertas?|cifrado|2fa|mfa)\b",
    ],
    "OBEY": [
        r"\bsin (confirmarl?[oa]?|verificarl?[oa]?|comprobarl?[oa]?)\b",
        r"\b(hazle caso|hazles caso|haz caso|obedecel[oa]s?|cumplel[oa]s?|sin mas|sin discutir|sin rechistar)\b",
        r"\b(tiene|tienen|tendra|tendran) (prioridad|preferencia|precedencia) sobre\b.{0,10}\b(tus|sus) (propias )?(instrucciones|reglas|normas|politicas)|\b(prevalece\w*|esta\w* por encima) (de|sobre) (tus|sus) (instrucciones|reglas|normas)",
        r"\b(haz|hazlo|hacer|hazle|cumpl\w*|c[uú]mpl\w*|sigu\w*|seguir\w*|seguid\w*|ejecut\w*|obedec\w*|realiz\w*|trata\w*|toma\w*|acat\w*)\b",
        r"\b(sin (cuestionar\w*|dudar|pensar|preguntar|rechistar)|al pie de la letra|a ciegas|tal cual)\b",
    ],
    "SOURCE": [
        r"\b(archivo\w*|fichero\w*|repositorio\w*|readme\w*)\b|\.md\b",
        r"\b(campo de (comentarios|notas|observaciones)|comentarios?|observaciones)\b",
        r"\b(incidencia\w*|tickets?|texto\w*|pdf|contenido|apartado\w*|buscador\w*|api)\b",
        r"\b(herramienta\w*|busqueda\w*)\b",
        r"\b(correos?|e-?mails?|mensajes?|p[aá]ginas?|sitios?|webs?|resultados?|salidas?|respuestas?|adjuntos?|documentos?|recuperad\w*|descargad\w*|entrante\w*|recibid\w*|extern\w*)\b",
    ],
    "COMMANDS": [
        r"\b(indi(ca|que)\w*|pone que|se indica)\b",
        r"\b(para (el asistente|ti|la ia|el agente)|ordenes directas|diga que|dice que)\b",
        r"\b(pasos|acciones|tareas|peticiones|indicacion\w*)\b",
        r"\b(instrucci[oó]n\w*|[oó]rden\w*|comandos?|indicaciones|pida|pide|diga|dice|exija|exige|quiera|mande|contenga|contiene|vengan?|incluid\w*|ocult\w*|lo que)\b",
    ],
    "SEND": [
        r"\b(guarda\w*|almacena\w*)\b",
        r"\b(pega\w*|vuelca\w*|volcar|copia oculta|llevatel[oa]s?)\b",
        r"\b(reenv[ií]\w*|sub(e|ir|irla|irlo|elo|ela|idos)|public\w*)\b",
        r"\b(env[ií]\w*|mand\w*|reenv[ií]\w*|sub\w*|cargar?|export\w*|copi\w*|compart\w*|public\w*|sincroniz\w*|transfier\w*|transferi\w*|con copia|cco|cc)\b",
    ],
    "DATA": [
        r"\b(fichas? de (los )?(pacientes|clientes|empleados)|historias clinicas|datos (de salud|medicos|clinicos))\b",
        r"\b(conversaciones( de soporte)?|chats?|historial de (chat|conversaciones)|volcados?( de la base de datos)?|dumps?|copia de la base( de datos)?)\b",
        r"\b(facturas?|contratos?|nominas?|historial\w*( medico)?|expedientes?|resumen de (la )?cuenta|datos de (la )?cuenta|carpeta de \w+)\b",
        r"\b(ficheros|archivos|documentos|datos|expedientes) del cliente\b",
        r"\b(n[uú]meros de tel[eé]fono|direcciones de correo|direcciones|datos de (los )?clientes|base de datos de usuarios|todas las conversaciones)\b",
        r"\b(datos|tabla (completa )?de clientes|lista de clientes|base de (datos|clientes)|tabla|registros|n[uú]meros de tarjeta|tarjetas? de cr[eé]dito|datos bancarios|datos personales|agenda|lista de contactos|c[oó]digo fuente|historial de (conversaciones|pedidos)|todos los (tickets|mensajes|correos|archivos|clientes))\b",
    ],
    "OUTSIDE": [
        r"\b(la direccion que (te )?(de|den|diga|digan|indique|indiquen)|cualquier direccion|a quien lo pida)\b",
        r"\b(transfer\.sh|wetransfer|file\.io|mega\.nz|0x0\.st|ngrok|requestbin|webhook\.site|pastebin|gist\.github\.com)\b",
        r"\b(pendrive|usb|memoria usb|disco externo|a casa|portatil personal|movil personal|nube personal|drive personal|google drive|aseguradora externa)\b",
        r"\b(extern\w*|fuera de la empresa|terceros?|p[uú]blic\w*|privad\w*|personal\w*|desconocid\w*|gmail|yahoo|hotmail|pastebin|dropbox|webhook\w*|ftp|telegram)\b",
        r"https?://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b[\w-]+(\.[\w-]+)*\.(com|net|org|io|ru|cn|xyz|info|biz|me|co|app|dev|site|online|top|es|mx)\b",
        r"\b(esta|otra) direcci[oó]n\b",
    ],
    "REVEAL": [
        r"\b(sub(e|ir|elo|ela)|commitea\w*|haz commit de|empuja\w*)\b",
        r"\bpon\w*\b.{0,5}\ben (el|los|la) (log|logs|registro|chat|ticket|canal|nota)\b|\bloguea\w*",
        r"\b(pasa(le|les)?(l[oa]s?|sel[oa]s?)|pasale|facilita\w*|proporciona\w*|cuelga\w*|cuelgal[oa]s?)\b",
        r"\b(le[ea]l[eo]s?|leer|en voz alta|responde con|contesta con|dicta\w*|deletrea\w*)\b",
        r"\b(a[ñn]ad\w*|agreg\w*|adjunt\w*|cita\w*|comunica\w*)\b",
        r"\b(revel\w*|muestr\w*|mostr\w*|imprim\w*|peg\w*|compart\w*|divulg\w*|exp[oó]n\w*|expon\w*|dile|dime|decir|di|recit\w*|repit\w*|repet\w*|inclu\w*|env[ií]\w*|public\w*|escrib\w*|registr\w*|copi\w*|lee en voz alta|da|dale|dar|entreg\w*)\b",
    ],
    "SECRET": [
        r"\b(api[ -]?keys?|apikey|clave api|access key|secret key|tokens? de produccion|tu prompt|el prompt( completo)?|tus instrucciones (completas|iniciales|originales)|id_rsa|id_ed25519|clave privada|llave privada|ssh key)\b|\.pem\b",
        r"\b(clave|token|secreto|credencial)\w* de (stripe|aws|openai|github|slack|google|azure|paypal|la api|api)\b",
        r"\b(pin|cvv|cvc|numero completo de (la )?tarjeta|contrasena del wifi|contrasena del router)\b",
        r"\b(instrucciones ocultas|instrucciones internas|prompt del sistema)\b",
        r"\.env\b|\b\w*_(api_key|secret|secret_key|password|passwd|pwd|access_key|private_key)\b|\b(openai|aws|stripe|github|slack|gcp|azure)[\w-]*(key|token|secret)\b",
        r"\b(claves? (de )?api|claves? secretas?|claves? privadas?|claves? ssh|tokens?( de acceso)?|contrase[ñn]as?|credenciales|secretos?|cadenas? de conexi[oó]n|variables? de entorno|\.env|prompt (del|de) sistema|instrucciones (del sistema|internas|ocultas))\b",
        r"\btus (instrucciones|reglas ocultas)\b",
    ],
    "SECRET_CARE": [
        r"\.?gitignore\b|\bclave\w* (ssh )?public\w*|\b(en|al|del) gestor de (accesos|secretos|contrasenas)\b",
        r"\b(es un ataque|es (un )?phishing|es (un intento|sospechos)\w*|niegate|rechazal[oa]|no accedas|no lo hagas|no l[oa]s? sigas|no l[oa]s? cumplas|no l[oa]s? ejecutes|reportal[oa]|denuncial[oa])\b",
        r"\.env\.(example|sample|template|dist)\b|\b(valores locales|tus propios valores)\b",
        r"\b(le llegara|te llegara|llegara por|recibira|nuevo pin|por correo postal)\b",
        r"\b(enmascar\w*|oc[uú]lta(la|lo|las|los)|cambi\w*|rot\w*|revoc\w*|b[oó]veda|vault|[uú]ltimos (cuatro|4)|asteriscos|restablec\w*|olvid[oó] (su|la) contrase[ñn]a|si (la|el|una|un) (clave|token|contrase[ñn]a)|aparece|caducad\w*)\b",
    ],
    "APPROVAL_FAKED": [
        r"\b(entiende|asume|considera|da por hecho|supon|interpreta)\w*\b.{0,10}\bque (esta|estan|esta|ha dado|han dado) (de acuerdo|conforme|aprobad\w*|el visto bueno)|\bel silencio (es|cuenta como|equivale a|vale como) (un si|aprobacion|consentimiento|visto bueno)",
        r"\b(usa|reutiliza|aprovecha|recicla|copia)\w*\b.{0,40}\b(aprobacion|autorizacion|visto bueno|firma)\b.{0,30}\b(anterior|otro|otra|ayer|pasad[oa]|previ[oa])\b",
        r"\b(firma|visto bueno|rubrica)\b.{0,30}\b(la pones|ponla|la haces|hazla|imitala|falsificala|copiala)\b|\b(imita|falsifica|copia)\w* (la )?(firma|rubrica)\b",
        r"\b(marc|pon|deja|cambi|registr|anot|actualiz)\w*\b.{0,40}\b(como|por|a|en) (aprobad|autorizad|validad|firmad|visad)\w*\b(?!.{0,40}\b(solo|unicamente) (despues|cuando|si|tras|una vez)\b)",
        r"\b(tomalo|tomala|consideral[oa]|tratal[oa]|cuenta\w*|da\w*) (como|por) (aprobad|autorizad|validad|visto bueno|una aprobacion|una autorizacion)\w*",
        r"\b(usa|reutiliza|aprovecha|recicla)\w*\b.{0,30}\b(aprobacion|autorizacion|visto bueno|firma) (anterior|de (otro|otra|ayer|la semana pasada|otro pedido|otro caso))\b",
    ],
    "WIDEN_SCOPE": [
        r"\bpara que (cualquiera|todo el mundo|cualquier persona|todos) pueda\w* (leer|ver|acceder|descargar|editar|escribir)",
        r"\b(ampli|sub|aument|elev|increment)\w*\b.{0,30}\b(descuento|limite|credito|compensacion|reembolso)\w*\b.{0,30}\b(al|hasta el|a un|hasta un) \d{2,}\s?%",
        r"\b(deja|dejal[oa]|configura|pon|cambia|abre)\w*\b.{0,50}\b(lectura|escritura|acceso) (public\w*|anonim\w*|para todos|abiert\w*)",
        r"\b(compart|abr|publica|expon|da acceso)\w*\b.{0,50}\b(con|a|para) (toda la (organizacion|empresa|compania|plantilla)|todo el mundo|todos los (usuarios|empleados)|cualquiera|cualquier persona)\b",
        r"\b(haz|hazl[oa]|hacer|pon|ponl[oa]|poner|deja|dejal[oa]|configura|cambia)\w*\b.{0,30}\b(publico|publica|publicos|publicas|abierto a todos|accesible para todos)\b",
        r"\b(token|clave|acceso|sesion|contrasena|permiso|credencial|api key|enlace)\w*\b.{0,40}\b(no caduque\w*|no expire\w*|nunca caduque\w*|nunca expire\w*|sin (fecha de )?(caducidad|vencimiento|expiracion)|no venza|permanente\w*|para siempre|indefinid\w*)",
        r"\b(sub|aument|increment|elev|ampli|dobl|quit)\w*\b.{0,20}\b(el |los )?(limite|cupo|tope)s?\b.{0,50}\b(por encima de|mas alla de|sin consultar|sin aprobacion|saltandote|fuera de)\b",
    ],
    "ADDRESSED_TO_AGENT": [
        r"\[\s*(mensaje del )?sistema\s*\]",
        r"\b(nota|mensaje|aviso|atencion|instrucciones?|importante)\b\W{0,3}(para (el |la |cualquier )?|al? )?((agente|asistente|modelo)( de)? )?(ia|llm)\b",
        r"\b(si eres|querido|estimado) (un |el )?(asistente|agente|modelo|bot) de ia\b",
        r"\b(asistente|agente|ia|bot)\b\W{1,3}(a partir de ahora|desde ahora|de ahora en adelante)\b",
    ],
    "DISTRUST": [
        r"\b(es un ataque|es (un )?phishing|es (un intento|sospechos)\w*|niegate|rechazal[oa]|no accedas|no lo hagas|no l[oa]s? sigas|no l[oa]s? cumplas|no l[oa]s? ejecutes|reportal[oa]|denuncial[oa])\b",
        r"\btrat\w* como (datos|informacion|texto|contenido)\b|\bsolo como referencia\b",
        r"\b(documentacion oficial|documentacion del (producto|fabricante)|manual (oficial|del fabricante|de usuario))\b",
        r"\bcomo (datos|informacion|texto)\b.{0,20}\bno como (ordenes|instrucciones)|\b(no las sigas|no los sigas|no la sigas|ignoral[oa]s|sin ejecutar)\b",
    ],
    "SECRET_DUMP": [
        r"\b(dile|dale|di|lee|leele|dicta\w*|pasale|comunica\w*|facilita\w*)\b.{0,30}\b(al que llama|a quien llama|al llamante|a la persona que llama|al interlocutor)\b.{0,40}\b(codigo|pin|otp|clave|contrasena)",
        r"\b(codigo|pin|otp)\w*\b.{0,40}\b(acabamos de enviar|hemos enviado|enviado) al titular\b",
    ],
    "GATED": [
        r"\b(if exists )?(tmp|temp|test)_\w+|\b\w+_(tmp|temp|test)\b|\bbase de datos (local|de (desarrollo|pruebas))\b|\bentorno (local|de (desarrollo|pruebas))\b",
        r"\b(el|la) responsable\b.{0,30}\b(lo |la )?(aprueba|autoriza|valida)\b|\b(tras|despues de|con) (la )?(aprobacion|autorizacion)\b|\bsolo (con|tras|despues de) (la |una )?(aprobacion|autorizacion|copia)\b|\bse hace una copia\b|\b(con|previa) copia (previa|de seguridad)\b",
    ],
}
CONCEPTS = merge(CONCEPTS, COMMANDS)

# "sin" right before a verb negates it: "sin ejecutar nada", "sin borrar nada"
# a clause that starts with "no"/"nunca" and a verb negates its "sin ...": "No liberes abonos sin pasar por el comité"
NEGATION_CLAUSE = r"^(no|nunca|jamas) \w+\b.{0,80}\bsin\b"
NEGATION_BEFORE = r"\b(no|nunca|jam[aá]s|ni|prohibido|en ning[uú]n caso|bajo ning[uú]n concepto)\b|\bsin\s+$"
NEGATION_AFTER = ""
