//! The grid of a sweep: the product of every `--vary path=v1,v2,...` list, each point a list
//! of `--set` overrides applied on top of the scenario.

/// One grid point: `(path, value)` pairs in the order the dimensions were given.
pub type Point = Vec<(String, String)>;

/// Every combination of the dimensions' values, the first dimension varying slowest. No
/// dimensions: one empty point (the scenario as it is).
pub fn points(dims: &[(String, Vec<String>)]) -> Vec<Point> {
    let mut out: Vec<Point> = vec![Vec::new()];
    for (path, values) in dims {
        out = out
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((path.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    out
}

/// `path=value` overrides for `--set`.
pub fn overrides(point: &Point) -> Vec<String> {
    point.iter().map(|(p, v)| format!("{p}={v}")).collect()
}

/// A short label, e.g. `keys=16 clients=8` (the last path segment of each dimension).
pub fn label(point: &Point) -> String {
    if point.is_empty() {
        return "-".into();
    }
    point
        .iter()
        .map(|(p, v)| format!("{}={v}", p.rsplit('.').next().unwrap_or(p)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_of_dimensions_first_slowest() {
        let dims = vec![
            ("workload.keys".to_string(), vec!["1".into(), "16".into()]),
            ("workload.clients".to_string(), vec!["4".into(), "8".into()]),
        ];
        let p = points(&dims);
        assert_eq!(p.len(), 4);
        assert_eq!(label(&p[1]), "keys=1 clients=8");
        assert_eq!(
            overrides(&p[2]),
            vec!["workload.keys=16", "workload.clients=4"]
        );
        assert_eq!(points(&[]), vec![Vec::new()]);
    }
}
