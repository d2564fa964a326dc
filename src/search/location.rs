//! Where a search comes from: the country a free-text `location` names ("Berlin, Germany",
//! "São Paulo, Brazil", "Tokyo"), and the language most searches from a country are in.
//! Both steer ranking towards pages in that language and are passed on to providers.

/// Countries by the names a location gives them (English and their own), with their ISO
/// code; a few large cities stand for their country when named alone.
#[rustfmt::skip]
const NAMES: &[(&str, &str)] = &[
    ("united states", "us"), ("usa", "us"), ("us", "us"), ("america", "us"),
    ("united kingdom", "gb"), ("uk", "gb"), ("england", "gb"), ("scotland", "gb"), ("wales", "gb"),
    ("great britain", "gb"), ("ireland", "ie"), ("canada", "ca"), ("australia", "au"),
    ("new zealand", "nz"), ("india", "in"), ("south africa", "za"),
    ("germany", "de"), ("deutschland", "de"), ("austria", "at"), ("österreich", "at"),
    ("switzerland", "ch"), ("schweiz", "ch"), ("suisse", "ch"),
    ("france", "fr"), ("belgium", "be"), ("belgique", "be"), ("belgië", "be"),
    ("spain", "es"), ("españa", "es"), ("mexico", "mx"), ("méxico", "mx"), ("argentina", "ar"),
    ("colombia", "co"), ("chile", "cl"), ("italy", "it"), ("italia", "it"),
    ("portugal", "pt"), ("brazil", "br"), ("brasil", "br"),
    ("netherlands", "nl"), ("nederland", "nl"), ("holland", "nl"),
    ("japan", "jp"), ("日本", "jp"), ("china", "cn"), ("中国", "cn"), ("taiwan", "tw"),
    ("south korea", "kr"), ("korea", "kr"), ("russia", "ru"), ("россия", "ru"),
    ("poland", "pl"), ("polska", "pl"), ("sweden", "se"), ("sverige", "se"),
    ("london", "gb"), ("paris", "fr"), ("berlin", "de"), ("madrid", "es"), ("rome", "it"),
    ("tokyo", "jp"), ("new york", "us"), ("san francisco", "us"), ("toronto", "ca"),
    ("sydney", "au"), ("amsterdam", "nl"), ("vienna", "at"), ("wien", "at"), ("munich", "de"),
    ("münchen", "de"), ("beijing", "cn"), ("shanghai", "cn"), ("seoul", "kr"), ("moscow", "ru"),
    ("warsaw", "pl"), ("stockholm", "se"), ("lisbon", "pt"), ("são paulo", "br"),
];

/// The ISO country code (lowercase) that `location` names: its parts are read from the
/// last (the country, as locations are usually written) to the first.
pub fn country_of(location: &str) -> Option<&'static str> {
    location.rsplit(',').find_map(|part| {
        let part = part.trim().to_lowercase();
        NAMES.iter().find(|(name, _)| *name == part).map(|(_, code)| *code)
    })
}

/// The language most searches from `country` (an ISO code, lowercase) are in; empty for
/// no country.
pub fn language_of(country: &str) -> &'static str {
    match country {
        "de" | "at" | "ch" => "de",
        "fr" | "be" => "fr",
        "es" | "mx" | "ar" | "co" | "cl" => "es",
        "it" => "it",
        "pt" | "br" => "pt",
        "nl" => "nl",
        "jp" => "ja",
        "cn" | "tw" => "zh",
        "kr" => "ko",
        "ru" => "ru",
        "pl" => "pl",
        "se" => "sv",
        "" => "",
        _ => "en",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_name_their_country() {
        assert_eq!(country_of("Berlin, Germany"), Some("de"));
        assert_eq!(country_of("San Francisco, California, United States"), Some("us"));
        assert_eq!(country_of("São Paulo"), Some("br"));
        assert_eq!(country_of(" tokyo "), Some("jp"));
        assert_eq!(country_of("Springfield, Nowhere"), None);
        assert_eq!(language_of(country_of("Wien, Österreich").unwrap_or_default()), "de");
        assert_eq!(language_of(""), "");
    }
}
